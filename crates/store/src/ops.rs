//! [`PgMonitoringStore`] (fleet counts from the planner's statistics, stops from the state log)
//! and [`PgMetricsHistoryStore`] (`tb_polling_metrics_history`).

use crate::error::db_err;
use crate::sql::{col, stmt};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::store::{MetricsHistoryStore, MonitoringStore, StoreResult};
use domain::{FleetCounts, HistoryResolution, HistoryScope, MetricsPoint, StopReason};
use sea_orm::{ConnectionTrait, DatabaseConnection, QueryResult};
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
                 AND to_status = 0 GROUP BY stop_reason",
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

/// The PostgreSQL [`MetricsHistoryStore`].
#[derive(Debug, Clone)]
pub struct PgMetricsHistoryStore {
    db: DatabaseConnection,
}

impl PgMetricsHistoryStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgMetricsHistoryStore { db }
    }
}

const COLUMNS: &str = "bucket_at, polls, failures, requeued, due_backlog, oldest_due_age_secs, \
                       depth, gateway_calls, gateway_errors, gateway_throttles, stops";

fn point(row: &QueryResult) -> StoreResult<MetricsPoint> {
    let stops: serde_json::Value = col(row, "stops")?;
    let stops = stops
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_i64().map(|n| (k.clone(), n)))
                .collect()
        })
        .unwrap_or_default();
    Ok(MetricsPoint {
        bucket_at: col(row, "bucket_at")?,
        polls: col(row, "polls")?,
        failures: col(row, "failures")?,
        requeued: col(row, "requeued")?,
        due_backlog: col(row, "due_backlog")?,
        oldest_due_age_secs: col(row, "oldest_due_age_secs")?,
        depth: col(row, "depth")?,
        gateway_calls: col(row, "gateway_calls")?,
        gateway_errors: col(row, "gateway_errors")?,
        gateway_throttles: col(row, "gateway_throttles")?,
        stops,
    })
}

#[async_trait]
impl MetricsHistoryStore for PgMetricsHistoryStore {
    async fn upsert_minute(&self, scope: HistoryScope, points: &[MetricsPoint]) -> StoreResult<()> {
        for p in points {
            let stops = serde_json::to_value(&p.stops)
                .map_err(|e| domain::StoreError::Invalid(e.to_string()))?;
            self.db
                .execute_raw(stmt(
                    &format!(
                        "INSERT INTO tb_polling_metrics_history (resolution, task_type, {COLUMNS}) \
                         VALUES ('minute', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
                         ON CONFLICT (resolution, task_type, bucket_at) DO UPDATE SET \
                         polls = EXCLUDED.polls, failures = EXCLUDED.failures, \
                         requeued = EXCLUDED.requeued, due_backlog = EXCLUDED.due_backlog, \
                         oldest_due_age_secs = EXCLUDED.oldest_due_age_secs, \
                         depth = EXCLUDED.depth, gateway_calls = EXCLUDED.gateway_calls, \
                         gateway_errors = EXCLUDED.gateway_errors, \
                         gateway_throttles = EXCLUDED.gateway_throttles, stops = EXCLUDED.stops"
                    ),
                    [
                        scope.as_str().into(),
                        p.bucket_at.into(),
                        p.polls.into(),
                        p.failures.into(),
                        p.requeued.into(),
                        p.due_backlog.into(),
                        p.oldest_due_age_secs.into(),
                        p.depth.into(),
                        p.gateway_calls.into(),
                        p.gateway_errors.into(),
                        p.gateway_throttles.into(),
                        stops.into(),
                    ],
                ))
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }

    async fn rollup(
        &self,
        from: HistoryResolution,
        to: HistoryResolution,
        since: DateTime<Utc>,
    ) -> StoreResult<u64> {
        // `date_trunc` in UTC: the dashboard shifts buckets to CMP_TIMEZONE when it draws them.
        let sql = "WITH src AS ( \
              SELECT * FROM tb_polling_metrics_history \
              WHERE resolution = $1 AND bucket_at >= date_trunc($3, $4 AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'), \
            agg AS ( \
              SELECT task_type, date_trunc($3, bucket_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS b, \
                sum(polls)::int8 AS polls, sum(failures)::int8 AS failures, \
                sum(requeued)::int8 AS requeued, max(due_backlog) AS due_backlog, \
                max(oldest_due_age_secs) AS oldest_due_age_secs, max(depth) AS depth, \
                sum(gateway_calls)::int8 AS gateway_calls, sum(gateway_errors)::int8 AS gateway_errors, \
                sum(gateway_throttles)::int8 AS gateway_throttles \
              FROM src GROUP BY 1, 2), \
            st AS ( \
              SELECT task_type, b, jsonb_object_agg(k, n) AS stops FROM ( \
                SELECT task_type, date_trunc($3, bucket_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS b, \
                  e.key AS k, sum(e.value::bigint) AS n \
                FROM src, jsonb_each_text(src.stops) e GROUP BY 1, 2, 3) x GROUP BY 1, 2) \
            INSERT INTO tb_polling_metrics_history (resolution, task_type, bucket_at, polls, \
              failures, requeued, due_backlog, oldest_due_age_secs, depth, gateway_calls, \
              gateway_errors, gateway_throttles, stops) \
            SELECT $2, agg.task_type, agg.b, agg.polls, agg.failures, agg.requeued, \
              agg.due_backlog, agg.oldest_due_age_secs, agg.depth, agg.gateway_calls, \
              agg.gateway_errors, agg.gateway_throttles, COALESCE(st.stops, '{}'::jsonb) \
            FROM agg LEFT JOIN st USING (task_type, b) \
            ON CONFLICT (resolution, task_type, bucket_at) DO UPDATE SET \
              polls = EXCLUDED.polls, failures = EXCLUDED.failures, requeued = EXCLUDED.requeued, \
              due_backlog = EXCLUDED.due_backlog, oldest_due_age_secs = EXCLUDED.oldest_due_age_secs, \
              depth = EXCLUDED.depth, gateway_calls = EXCLUDED.gateway_calls, \
              gateway_errors = EXCLUDED.gateway_errors, gateway_throttles = EXCLUDED.gateway_throttles, \
              stops = EXCLUDED.stops";
        let unit = match to {
            HistoryResolution::Minute => "minute",
            HistoryResolution::Hour => "hour",
            HistoryResolution::Day => "day",
        };
        let res = self
            .db
            .execute_raw(stmt(
                sql,
                [
                    from.as_str().into(),
                    to.as_str().into(),
                    unit.into(),
                    since.into(),
                ],
            ))
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected())
    }

    async fn prune(
        &self,
        resolution: HistoryResolution,
        before: DateTime<Utc>,
    ) -> StoreResult<u64> {
        let res = self
            .db
            .execute_raw(stmt(
                "DELETE FROM tb_polling_metrics_history WHERE resolution = $1 AND bucket_at < $2",
                [resolution.as_str().into(), before.into()],
            ))
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected())
    }

    async fn series(
        &self,
        scope: HistoryScope,
        resolution: HistoryResolution,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<MetricsPoint>> {
        let rows = self
            .db
            .query_all_raw(stmt(
                &format!(
                    "SELECT {COLUMNS} FROM tb_polling_metrics_history WHERE resolution = $1 \
                     AND task_type = $2 AND bucket_at >= $3 AND bucket_at < $4 ORDER BY bucket_at"
                ),
                [
                    resolution.as_str().into(),
                    scope.as_str().into(),
                    from.into(),
                    to.into(),
                ],
            ))
            .await
            .map_err(db_err)?;
        rows.iter().map(point).collect()
    }
}
