//! [`PgUsageHistoryStore`]: a card's `tb_data_usage_record` rows read by hour, for the card
//! page's chart of the month. A read only; the rows are written by the usage poll (`usage.rs`).

use crate::error::db_err;
use crate::sql::{col, stmt};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::store::{StoreResult, UsageHistoryStore};
use domain::{CardId, UsageHour};
use sea_orm::{ConnectionTrait, DatabaseConnection};

/// One range scan of `idx_data_usage_record_card` (only the partitions of the range are
/// visited); the hour's month total is its last record's.
const USAGE_HOURS: &str = r#"
SELECT date_trunc('hour', recorded_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour,
       (array_agg(month_total_mb ORDER BY recorded_at DESC, id DESC))[1] AS month_total_mb,
       sum(delta_mb) AS delta_mb,
       count(*) AS records
FROM tb_data_usage_record
WHERE iot_card_id = $1 AND recorded_at >= $2 AND recorded_at < $3
GROUP BY 1
ORDER BY 1
LIMIT $4
"#;

/// The PostgreSQL [`UsageHistoryStore`].
#[derive(Debug, Clone)]
pub struct PgUsageHistoryStore {
    db: DatabaseConnection,
}

impl PgUsageHistoryStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgUsageHistoryStore { db }
    }
}

#[async_trait]
impl UsageHistoryStore for PgUsageHistoryStore {
    async fn usage_hours(
        &self,
        card: CardId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: u32,
    ) -> StoreResult<Vec<UsageHour>> {
        let rows = self
            .db
            .query_all_raw(stmt(
                USAGE_HOURS,
                [
                    card.get().into(),
                    from.into(),
                    to.into(),
                    i64::from(limit).into(),
                ],
            ))
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|row| {
                let records: i64 = col(row, "records")?;
                Ok(UsageHour {
                    hour: col(row, "hour")?,
                    month_total_mb: col(row, "month_total_mb")?,
                    delta_mb: col(row, "delta_mb")?,
                    records: u64::try_from(records).unwrap_or(0),
                })
            })
            .collect()
    }
}
