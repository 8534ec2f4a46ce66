//! Models of the admin tables: alert rules, data cleanup, manual trigger log, API keys.

use crate::{AlertRuleId, ApiKeyId, CleanupConfigId, StopReason, TaskType};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// How an alert rule compares its metric with the threshold.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AlertOperator {
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
}

str_enum!(AlertOperator { Gt => ">", Ge => ">=", Lt => "<", Le => "<=" });

impl AlertOperator {
    pub fn holds(self, value: Decimal, threshold: Decimal) -> bool {
        match self {
            AlertOperator::Gt => value > threshold,
            AlertOperator::Ge => value >= threshold,
            AlertOperator::Lt => value < threshold,
            AlertOperator::Le => value <= threshold,
        }
    }
}

/// What an alert rule watches. Rates are fractions 0..1 over the rule's window; ages are
/// seconds; counts are cards; `stops_per_minute` is stops per minute over the window (of one
/// reason when the rule names one); `initializer_failed` is 1 when the initializer's last run
/// failed, else 0; `carrier_round_ratio` is the worst carrier's achievable round time over its
/// configured interval.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertMetric {
    /// Due cards (score <= now) not yet taken, summed over the shards.
    DueBacklog,
    /// Seconds since the oldest due card came due: a stalled queue looks idle otherwise.
    OldestDueAge,
    /// Failed polls / all polls over the window.
    FailureRate,
    /// Gateway calls answered with an error (not a throttle) / all calls over the window.
    GatewayErrorRate,
    /// Gateway calls throttled / all calls over the window.
    GatewayThrottleRate,
    /// Cards stopped per minute over the window.
    StopsPerMinute,
    /// Entries of the queues (due, future and leased), summed over the shards.
    QueueDepth,
    /// 1 when the initializer's status is `failed`.
    InitializerFailed,
    /// The largest achievable round over its interval among the enabled carriers with cards
    /// to poll (`BudgetReport::worst_round_ratio`, from the `carrier_budget` job's last
    /// figures): above 1, a carrier's call budget cannot keep its cards at their interval.
    CarrierRoundRatio,
}

str_enum!(AlertMetric {
    DueBacklog => "due_backlog",
    OldestDueAge => "oldest_due_age",
    FailureRate => "failure_rate",
    GatewayErrorRate => "gateway_error_rate",
    GatewayThrottleRate => "gateway_throttle_rate",
    StopsPerMinute => "stops_per_minute",
    QueueDepth => "queue_depth",
    InitializerFailed => "initializer_failed",
    CarrierRoundRatio => "carrier_round_ratio",
});

impl AlertMetric {
    pub const ALL: [AlertMetric; 9] = [
        AlertMetric::DueBacklog,
        AlertMetric::OldestDueAge,
        AlertMetric::FailureRate,
        AlertMetric::GatewayErrorRate,
        AlertMetric::GatewayThrottleRate,
        AlertMetric::StopsPerMinute,
        AlertMetric::QueueDepth,
        AlertMetric::InitializerFailed,
        AlertMetric::CarrierRoundRatio,
    ];

    /// Whether the metric is per task type (a rule without one sums or takes the worst type).
    pub const fn per_task_type(self) -> bool {
        matches!(
            self,
            AlertMetric::DueBacklog
                | AlertMetric::OldestDueAge
                | AlertMetric::FailureRate
                | AlertMetric::QueueDepth
        )
    }
}

/// The editable part of an alert rule.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertRuleInput {
    pub name: String,
    pub metric: AlertMetric,
    pub task_type: Option<TaskType>,
    /// Only for `stops_per_minute`: count stops of this reason alone.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    pub operator: AlertOperator,
    /// A JSON number (a decimal string is read too).
    #[cfg_attr(feature = "openapi", schema(value_type = f64, example = 1000))]
    #[serde(with = "crate::figure")]
    pub threshold: Decimal,
    pub window_secs: i32,
    pub enabled: bool,
    pub webhook_url: Option<String>,
    pub cooldown_secs: i32,
    /// The key of the webhook's HMAC-SHA256 signature. Write-only: never serialised, so a
    /// viewer reading rules never sees it. On create, absent means "generate one".
    #[serde(default, skip_serializing)]
    pub webhook_secret: Option<String>,
}

/// A row of `tb_polling_alert_rule`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertRule {
    pub id: AlertRuleId,
    #[serde(flatten)]
    pub rule: AlertRuleInput,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A row of `tb_polling_alert_history`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertHistory {
    pub id: i64,
    pub rule_id: AlertRuleId,
    /// The metric's value when the rule fired, a JSON number.
    #[cfg_attr(feature = "openapi", schema(value_type = f64, example = 1200))]
    #[serde(with = "crate::figure")]
    pub value: Decimal,
    pub fired_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// The firing's webhook was delivered (2xx) — false while pending, failed or without URL.
    pub notified: bool,
    /// The resolution's webhook was delivered.
    #[serde(default)]
    pub resolve_notified: bool,
    /// The last delivery error, if a delivery gave up.
    #[serde(default)]
    pub notify_error: Option<String>,
}

/// The editable part of a data cleanup config.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupConfigInput {
    /// The table cleaned, e.g. `tb_data_usage_record`.
    pub table_name: String,
    pub retention_days: i32,
    pub enabled: bool,
    pub batch_size: i32,
}

/// A row of `tb_data_cleanup_config`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupConfig {
    pub id: CleanupConfigId,
    #[serde(flatten)]
    pub config: CleanupConfigInput,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A row of `tb_data_cleanup_log`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupLog {
    pub id: i64,
    pub table_name: String,
    pub rows_deleted: i64,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// `running`, `completed`, `failed`.
    pub status: String,
    pub error: Option<String>,
    /// The run this row belongs to (one row per table per run).
    #[serde(default)]
    pub run_id: Option<String>,
}

/// A row of `tb_polling_manual_trigger_log`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualTriggerLog {
    pub id: i64,
    /// The API key name that asked.
    pub who: String,
    /// Card ids or the filter, as JSON.
    pub scope: serde_json::Value,
    pub task_types: Vec<TaskType>,
    pub count: i64,
    pub created_at: DateTime<Utc>,
}

/// What an API key may do.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiKeyRole {
    /// Everything, incl. polling configs and keys.
    Admin,
    /// Reads, plus the day-to-day actions: manual trigger, operator stop/start of cards and
    /// devices, polling status, bind/unbind, imports.
    Operator,
    /// GET only.
    Viewer,
}

str_enum!(ApiKeyRole { Admin => "admin", Operator => "operator", Viewer => "viewer" });

/// A row of `tb_api_key`. The key itself is never stored, only its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: ApiKeyId,
    pub name: String,
    pub role: ApiKeyRole,
    #[serde(skip_serializing)]
    pub key_hash: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}
