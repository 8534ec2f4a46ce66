//! Models and store traits of the operations side (`docs/admin-ops.md`): fleet counts for
//! monitoring, the partitions of the usage table, and the metrics history the dashboard charts.

use crate::store::StoreResult;
use crate::{StopReason, TaskType};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Card counts of the fleet, read without scanning the card table.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetCounts {
    /// Live cards.
    pub cards: u64,
    /// Live cards whose own `enable_polling` is true.
    pub polling_enabled: u64,
    /// Stopped cards by stop reason (`manual`, `traffic_exhausted`, ...).
    pub stopped_by_reason: BTreeMap<String, u64>,
    /// Where the figures come from: `estimate` (the planner's statistics, `pg_class.reltuples`
    /// and `pg_stats` frequencies, as fresh as the last ANALYZE) or `exact` (a count, only for a
    /// table never analysed and small enough to count cheaply).
    pub source: String,
}

/// One monthly partition of `tb_data_usage_record`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsagePartition {
    pub name: String,
    /// First day covered (inclusive).
    pub from: NaiveDate,
    /// First day not covered.
    pub to: NaiveDate,
    /// `reltuples` of the partition (-1 when never analysed is reported as 0).
    pub estimated_rows: u64,
}

/// The resolution of a metrics history point.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryResolution {
    Minute,
    Hour,
    Day,
}

str_enum!(HistoryResolution { Minute => "minute", Hour => "hour", Day => "day" });

/// The task type column of a history row: one task type, or the fleet (`all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryScope {
    Task(TaskType),
    All,
}

impl HistoryScope {
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryScope::Task(t) => t.as_str(),
            HistoryScope::All => "all",
        }
    }
}

/// One point of `tb_polling_metrics_history`. Counters (`polls`, `failures`, `requeued`,
/// gateway figures, stops) are totals over the bucket; gauges (`due_backlog`,
/// `oldest_due_age_secs`, `depth`) are the highest sample within it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricsPoint {
    pub bucket_at: DateTime<Utc>,
    pub polls: i64,
    pub failures: i64,
    pub requeued: i64,
    pub due_backlog: i64,
    pub oldest_due_age_secs: i64,
    pub depth: i64,
    pub gateway_calls: i64,
    pub gateway_errors: i64,
    pub gateway_throttles: i64,
    /// Cards stopped in the bucket, by reason (fleet rows only).
    pub stops: BTreeMap<String, i64>,
}

/// Reads for monitoring that never scan the card table.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait MonitoringStore: Send + Sync {
    async fn fleet_counts(&self) -> StoreResult<FleetCounts>;
    /// Stops (`ok` rows of `tb_card_state_log` from online to stopped: the carrier's yes; an
    /// intent, a refusal or an interrupted call is not a stop) in `[from, to)`, by reason;
    /// reads the state log by its time index.
    async fn stops_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<HashMap<StopReason, u64>>;
}

/// `tb_polling_metrics_history`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait MetricsHistoryStore: Send + Sync {
    /// Writes (or overwrites) minute points.
    async fn upsert_minute(&self, scope: HistoryScope, points: &[MetricsPoint]) -> StoreResult<()>;
    /// Recomputes the `to` points from the `from` points since `since` (hours from minutes,
    /// days from hours): counters summed, gauges maxed. Returns the points written.
    async fn rollup(
        &self,
        from: HistoryResolution,
        to: HistoryResolution,
        since: DateTime<Utc>,
    ) -> StoreResult<u64>;
    /// Deletes the points of `resolution` older than `before`.
    async fn prune(&self, resolution: HistoryResolution, before: DateTime<Utc>)
    -> StoreResult<u64>;
    /// Points of one scope and resolution in `[from, to)`, oldest first.
    async fn series(
        &self,
        scope: HistoryScope,
        resolution: HistoryResolution,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<MetricsPoint>>;
}

/// One hour of a card's usage records (`tb_data_usage_record`), for the card page's chart of
/// the month.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageHour {
    /// The start of the hour.
    pub hour: DateTime<Utc>,
    /// The carrier's month total reported by the hour's last record (decimal string).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub month_total_mb: crate::Megabytes,
    /// What the hour's records added (decimal string).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub delta_mb: crate::Megabytes,
    /// How many records the hour holds.
    pub records: u64,
}

/// A card's usage history, read by hour.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait UsageHistoryStore: Send + Sync {
    /// The card's records in `[from, to)` grouped by hour, oldest first, at most `limit` hours:
    /// one index range scan of `(iot_card_id, recorded_at)`.
    async fn usage_hours(
        &self,
        card: crate::CardId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: u32,
    ) -> StoreResult<Vec<UsageHour>>;
}
