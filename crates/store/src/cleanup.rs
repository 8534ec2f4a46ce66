//! [`PgCleanupStore`]: `tb_data_cleanup_config`, `tb_data_cleanup_log`, and the batched
//! deletions of old rows themselves.

use crate::cleanup_partitions as partitions;
use crate::convert;
use crate::entity::{data_cleanup_config as config, data_cleanup_log as log};
use crate::error::{db_err, not_found};
use crate::sql::{count, paged, stmt};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use domain::store::{CleanupStore, Page, Paged, StoreResult};
use domain::{
    CleanupConfig, CleanupConfigId, CleanupConfigInput, CleanupLog, StoreError, UsagePartition,
};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection,
    EntityTrait, QueryFilter, QueryOrder,
};

/// The PostgreSQL [`CleanupStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgCleanupStore {
    db: DatabaseConnection,
}

impl PgCleanupStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgCleanupStore { db }
    }
}

/// The statements of one cleanable table: the CHECK on `tb_data_cleanup_config.table_name`
/// lists exactly these. Table names never reach SQL from the caller: an unknown name is refused
/// before any statement is built, and every text here is static.
struct Cleanable {
    count: &'static str,
    delete: &'static str,
}

/// `(table, time column)` -> statements. Plain tables delete by `ctid` (the fastest way to name
/// rows without an index on the time column; `ctid = ANY(ARRAY(...))` plans as a TID scan);
/// the partitioned `tb_data_usage_record` deletes by its primary key `(id, recorded_at)`, since
/// a `ctid` is only unique within one partition.
macro_rules! cleanable {
    ($table:literal, $time:literal) => {
        Cleanable {
            count: concat!(
                "SELECT count(*) AS n FROM ",
                $table,
                " WHERE ",
                $time,
                " < $1"
            ),
            delete: concat!(
                "DELETE FROM ",
                $table,
                " WHERE ctid = ANY(ARRAY(SELECT ctid FROM ",
                $table,
                " WHERE ",
                $time,
                " < $1 LIMIT $2))"
            ),
        }
    };
}

fn cleanable(table: &str) -> StoreResult<Cleanable> {
    Ok(match table {
        "tb_data_usage_record" => Cleanable {
            count: "SELECT count(*) AS n FROM tb_data_usage_record WHERE recorded_at < $1",
            delete: "DELETE FROM tb_data_usage_record WHERE (id, recorded_at) IN \
                     (SELECT id, recorded_at FROM tb_data_usage_record WHERE recorded_at < $1 \
                      LIMIT $2)",
        },
        // Rows of months without a partition of their own: the monthly partitions are dropped
        // whole (`drop_usage_partition`), never deleted row by row.
        "tb_data_usage_record_default" => cleanable!("tb_data_usage_record_default", "recorded_at"),
        "tb_card_state_log" => cleanable!("tb_card_state_log", "created_at"),
        "tb_admin_audit_log" => cleanable!("tb_admin_audit_log", "created_at"),
        "tb_polling_metrics_history" => cleanable!("tb_polling_metrics_history", "bucket_at"),
        "tb_polling_alert_history" => cleanable!("tb_polling_alert_history", "fired_at"),
        "tb_carrier_event" => cleanable!("tb_carrier_event", "received_at"),
        "tb_data_cleanup_log" => cleanable!("tb_data_cleanup_log", "started_at"),
        "tb_polling_manual_trigger_log" => {
            cleanable!("tb_polling_manual_trigger_log", "created_at")
        }
        other => {
            return Err(StoreError::Invalid(format!(
                "table `{other}` is not cleanable"
            )));
        }
    })
}

fn active_model(input: &CleanupConfigInput) -> config::ActiveModel {
    config::ActiveModel {
        table_name: Set(input.table_name.clone()),
        retention_days: Set(input.retention_days),
        enabled: Set(input.enabled),
        batch_size: Set(input.batch_size),
        ..Default::default()
    }
}

#[async_trait]
impl CleanupStore for PgCleanupStore {
    async fn list_configs(&self, page: Page) -> StoreResult<Paged<CleanupConfig>> {
        let q = config::Entity::find().order_by_asc(config::Column::Id);
        paged(&self.db, q, page, |m| Ok(convert::cleanup_config(m))).await
    }

    async fn get_config(&self, id: CleanupConfigId) -> StoreResult<Option<CleanupConfig>> {
        Ok(config::Entity::find_by_id(id.get())
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(convert::cleanup_config))
    }

    async fn insert_config(&self, input: &CleanupConfigInput) -> StoreResult<CleanupConfig> {
        let model = active_model(input).insert(&self.db).await.map_err(db_err)?;
        Ok(convert::cleanup_config(model))
    }

    async fn update_config(
        &self,
        id: CleanupConfigId,
        input: &CleanupConfigInput,
    ) -> StoreResult<CleanupConfig> {
        let rows = config::Entity::update_many()
            .set(active_model(input))
            .col_expr(config::Column::UpdatedAt, Expr::current_timestamp())
            .filter(config::Column::Id.eq(id.get()))
            .exec_with_returning(&self.db)
            .await
            .map_err(db_err)?;
        rows.into_iter()
            .next()
            .map(convert::cleanup_config)
            .ok_or_else(|| not_found("cleanup config", id))
    }

    async fn delete_config(&self, id: CleanupConfigId) -> StoreResult<bool> {
        let res = config::Entity::delete_by_id(id.get())
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected > 0)
    }

    async fn count_older_than(&self, table: &str, cutoff: DateTime<Utc>) -> StoreResult<u64> {
        let sql = cleanable(table)?.count;
        count(&self.db, stmt(sql, [cutoff.into()])).await
    }

    async fn delete_older_than(
        &self,
        table: &str,
        cutoff: DateTime<Utc>,
        batch: u32,
    ) -> StoreResult<u64> {
        let sql = cleanable(table)?.delete;
        if batch == 0 {
            return Ok(0);
        }
        let res = self
            .db
            .execute_raw(stmt(sql, [cutoff.into(), i64::from(batch).into()]))
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected())
    }

    async fn table_exists(&self, table: &str) -> StoreResult<bool> {
        cleanable(table)?;
        partitions::table_exists(&self.db, table).await
    }

    async fn usage_partitions(&self) -> StoreResult<Vec<UsagePartition>> {
        partitions::list(&self.db).await
    }

    async fn drop_usage_partition(&self, name: &str) -> StoreResult<()> {
        partitions::detach_and_drop(&self.db, name).await
    }

    async fn ensure_usage_partitions(&self, from: NaiveDate, months: u32) -> StoreResult<u32> {
        partitions::ensure(&self.db, from, months).await
    }

    async fn set_progress(&self, id: i64, rows_deleted: i64) -> StoreResult<()> {
        log::Entity::update_many()
            .col_expr(log::Column::RowsDeleted, Expr::value(rows_deleted))
            .filter(log::Column::Id.eq(id))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn running(&self) -> StoreResult<Vec<CleanupLog>> {
        Ok(log::Entity::find()
            .filter(log::Column::Status.eq("running"))
            .order_by_asc(log::Column::Id)
            .all(&self.db)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(convert::cleanup_log)
            .collect())
    }

    async fn start_log(&self, table: &str, run_id: Option<String>) -> StoreResult<CleanupLog> {
        cleanable(table)?;
        let model = log::ActiveModel {
            table_name: Set(table.to_owned()),
            run_id: Set(run_id),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        Ok(convert::cleanup_log(model))
    }

    async fn finish_log(
        &self,
        id: i64,
        rows_deleted: i64,
        error: Option<String>,
    ) -> StoreResult<()> {
        let status = if error.is_some() {
            "failed"
        } else {
            "completed"
        };
        let res = log::Entity::update_many()
            .col_expr(log::Column::RowsDeleted, Expr::value(rows_deleted))
            .col_expr(log::Column::FinishedAt, Expr::current_timestamp())
            .col_expr(log::Column::Status, Expr::value(status))
            .col_expr(log::Column::Error, Expr::value(error))
            .filter(log::Column::Id.eq(id))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        if res.rows_affected == 0 {
            return Err(not_found("cleanup log", id));
        }
        Ok(())
    }

    async fn logs(&self, page: Page) -> StoreResult<Paged<CleanupLog>> {
        let q = log::Entity::find()
            .order_by_desc(log::Column::StartedAt)
            .order_by_desc(log::Column::Id);
        paged(&self.db, q, page, |m| Ok(convert::cleanup_log(m))).await
    }
}
