//! [`PgManualTriggerLogStore`]: `tb_polling_manual_trigger_log`.

use crate::convert;
use crate::entity::polling_manual_trigger_log as log;
use crate::error::db_err;
use crate::sql::paged;
use async_trait::async_trait;
use domain::store::{ManualTriggerLogStore, Page, Paged, StoreResult};
use domain::{ManualTriggerLog, TaskType};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseConnection, EntityTrait, QueryOrder};

/// The PostgreSQL [`ManualTriggerLogStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgManualTriggerLogStore {
    db: DatabaseConnection,
}

impl PgManualTriggerLogStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgManualTriggerLogStore { db }
    }
}

#[async_trait]
impl ManualTriggerLogStore for PgManualTriggerLogStore {
    async fn append(
        &self,
        who: &str,
        scope: &serde_json::Value,
        task_types: &[TaskType],
        count: i64,
    ) -> StoreResult<ManualTriggerLog> {
        let model = log::ActiveModel {
            who: Set(who.to_owned()),
            scope: Set(scope.clone()),
            task_types: Set(task_types.iter().map(|t| t.as_str().to_owned()).collect()),
            count: Set(count),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        convert::manual_trigger_log(model)
    }

    async fn list(&self, page: Page) -> StoreResult<Paged<ManualTriggerLog>> {
        let q = log::Entity::find()
            .order_by_desc(log::Column::CreatedAt)
            .order_by_desc(log::Column::Id);
        paged(&self.db, q, page, convert::manual_trigger_log).await
    }
}
