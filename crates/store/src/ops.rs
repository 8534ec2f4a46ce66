//! [`PgMonitoringStore`]: fleet counts from the planner's statistics (or a page sample), stops
//! from the state log.

use crate::error::db_err;
use crate::sql::{col, stmt};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::store::{MonitoringStore, StoreResult};
use domain::{FleetCounts, StopReason};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use std::collections::{BTreeMap, HashMap};

/// Below this many pages (8 KiB each: about 30,000 cards) the card table is counted exactly;
/// above, the planner's statistics answer in constant time.
const EXACT_COUNT_MAX_PAGES: i64 = 1_000;

/// The PostgreSQL [`MonitoringStore`].
#[derive(Debug, Clone)]
pub struct PgMonitoringStore {
    db: DatabaseConnection,
}

impl PgMonitoringStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgMonitoringStore { db }
    }

    async fn exact(&self) -> StoreResult<FleetCounts> {
        let row = self
            .db
            .query_one_raw(stmt(
                "SELECT count(*) AS cards, count(*) FILTER (WHERE enable_polling) AS enabled \
                 FROM tb_iot_card WHERE deleted_at IS NULL",
                [],
            ))
            .await
            .map_err(db_err)?;
        let (cards, enabled): (i64, i64) = match row {
            Some(row) => (col(&row, "cards")?, col(&row, "enabled")?),
            None => (0, 0),
        };
        let rows = self
            .db
            .query_all_raw(stmt(
                "SELECT stop_reason, count(*) AS n FROM tb_iot_card \
                 WHERE deleted_at IS NULL AND network_status = 0 GROUP BY stop_reason",
                [],
            ))
            .await
            .map_err(db_err)?;
        let mut stopped = BTreeMap::new();
        for row in rows {
            let reason: String = col(&row, "stop_reason")?;
            let n: i64 = col(&row, "n")?;
            stopped.insert(reason, n.max(0) as u64);
        }
        Ok(FleetCounts {
            cards: cards.max(0) as u64,
            polling_enabled: enabled.max(0) as u64,
            stopped_by_reason: stopped,
            source: "exact".into(),
        })
    }

    /// A large table never analysed (no `reltuples`, no `pg_stats`): a sample of about 2,000
    /// pages (`TABLESAMPLE SYSTEM`), scaled up. Reads those pages only, not the table.
    async fn sampled(&self, pages: i64) -> StoreResult<FleetCounts> {
        let percent = (200_000.0 / pages.max(1) as f64).clamp(0.01, 100.0);
        let scale = 100.0 / percent;
        let rows = self
            .db
            .query_all_raw(stmt(
                "SELECT stop_reason, network_status, count(*) AS n, \
                        count(*) FILTER (WHERE enable_polling) AS enabled \
                 FROM tb_iot_card TABLESAMPLE SYSTEM ($1) \
                 WHERE deleted_at IS NULL GROUP BY stop_reason, network_status",
                [percent.into()],
            ))
            .await
            .map_err(db_err)?;
        let (mut cards, mut enabled) = (0.0, 0.0);
        let mut stopped_by_reason = BTreeMap::new();
        for row in rows {
            let reason: String = col(&row, "stop_reason")?;
            let network: i16 = col(&row, "network_status")?;
            let n: i64 = col(&row, "n")?;
            let e: i64 = col(&row, "enabled")?;
            cards += n as f64 * scale;
            enabled += e as f64 * scale;
            if network == 0 {
                let key = if reason.is_empty() {
                    "unknown".into()
                } else {
                    reason
                };
                *stopped_by_reason.entry(key).or_insert(0) += (n as f64 * scale).round() as u64;
            }
        }
        Ok(FleetCounts {
            cards: cards.round() as u64,
            polling_enabled: enabled.round() as u64,
            stopped_by_reason,
            source: format!("estimate ({percent:.2}% page sample: tb_iot_card was never analysed)"),
        })
    }

    /// Value -> frequency of a column's most common values (`pg_stats`).
    async fn frequencies(&self, column: &str) -> StoreResult<(f64, BTreeMap<String, f64>)> {
        let row = self
            .db
            .query_one_raw(stmt(
                "SELECT null_frac::float8 AS null_frac, \
                        COALESCE(most_common_vals::text::text[], '{}') AS vals, \
                        COALESCE(most_common_freqs::float8[], '{}') AS freqs \
                 FROM pg_stats WHERE schemaname = current_schema() \
                 AND tablename = 'tb_iot_card' AND attname = $1",
                [column.into()],
            ))
            .await
            .map_err(db_err)?;
        let Some(row) = row else {
            return Ok((0.0, BTreeMap::new()));
        };
        let null_frac: f64 = col(&row, "null_frac")?;
        let vals: Vec<String> = col(&row, "vals")?;
        let freqs: Vec<f64> = col(&row, "freqs")?;
        Ok((null_frac, vals.into_iter().zip(freqs).collect()))
    }
}

#[async_trait]
impl MonitoringStore for PgMonitoringStore {
    async fn fleet_counts(&self) -> StoreResult<FleetCounts> {
        let row = self
            .db
            .query_one_raw(stmt(
                // The file's size, not `relpages`: that is as stale as the last ANALYZE.
                "SELECT reltuples::float8 AS tuples, \
                        (pg_relation_size(oid) / current_setting('block_size')::int8) AS pages \
                 FROM pg_class WHERE oid = 'tb_iot_card'::regclass",
                [],
            ))
            .await
            .map_err(db_err)?;
        let (tuples, pages): (f64, i64) = match row {
            Some(row) => (col(&row, "tuples")?, col(&row, "pages")?),
            None => (0.0, 0),
        };
        if pages < EXACT_COUNT_MAX_PAGES {
            return self.exact().await;
        }
        if tuples < 0.0 {
            return self.sampled(pages).await;
        }
        let (deleted_null_frac, _) = self.frequencies("deleted_at").await?;
        let (_, enable) = self.frequencies("enable_polling").await?;
        let (_, network) = self.frequencies("network_status").await?;
        let (_, reasons) = self.frequencies("stop_reason").await?;
        let live = tuples * deleted_null_frac;
        let stopped_frac = network.get("0").copied().unwrap_or(0.0);
        let mut stopped_by_reason: BTreeMap<String, u64> = reasons
            .into_iter()
            .filter(|(reason, _)| !reason.is_empty())
            .map(|(reason, f)| (reason, (tuples * f).round() as u64))
            .collect();
        if stopped_by_reason.is_empty() && stopped_frac > 0.0 {
            stopped_by_reason.insert("unknown".into(), (tuples * stopped_frac).round() as u64);
        }
        Ok(FleetCounts {
            cards: live.round() as u64,
            // `pg_stats` spells booleans `t` / `f`.
            polling_enabled: (live * enable.get("t").copied().unwrap_or(0.0)).round() as u64,
            stopped_by_reason,
            source: "estimate".into(),
        })
    }

    async fn stops_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<HashMap<StopReason, u64>> {
        let rows = self
            .db
            .query_all_raw(stmt(
                "SELECT stop_reason, count(*) AS n FROM tb_card_state_log \
                 WHERE created_at >= $1 AND created_at < $2 AND from_status = 1 \
                 AND to_status = 0 AND gateway_outcome = 'ok' GROUP BY stop_reason",
                [from.into(), to.into()],
            ))
            .await
            .map_err(db_err)?;
        let mut out = HashMap::new();
        for row in rows {
            let reason: String = col(&row, "stop_reason")?;
            let n: i64 = col(&row, "n")?;
            if let Ok(reason) = reason.parse::<StopReason>() {
                out.insert(reason, n.max(0) as u64);
            }
        }
        Ok(out)
    }
}
