//! [`PgMetricsHistoryStore`]: `tb_polling_metrics_history`, the sampled monitoring figures the
//! dashboard charts (minute points rolled up into hours and days, pruned by age).

use crate::error::db_err;
use crate::sql::{col, stmt};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::store::{MetricsHistoryStore, StoreResult};
use domain::{HistoryResolution, HistoryScope, MetricsPoint};
use sea_orm::{ConnectionTrait, DatabaseConnection, QueryResult};

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
