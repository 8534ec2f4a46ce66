//! [`PgPollingConfigStore`]: `tb_polling_config`.

use crate::convert;
use crate::entity::polling_config;
use crate::error::{db_err, not_found};
use async_trait::async_trait;
use domain::store::{PollingConfigStore, StoreResult};
use domain::{
    CardCategory, CardCondition, CarrierId, PollingConfig, PollingConfigId, PollingConfigInput,
};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder,
};

/// The PostgreSQL [`PollingConfigStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgPollingConfigStore {
    db: DatabaseConnection,
}

impl PgPollingConfigStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgPollingConfigStore { db }
    }

    fn updated(
        id: PollingConfigId,
        rows: Result<Vec<polling_config::Model>, sea_orm::DbErr>,
    ) -> StoreResult<PollingConfig> {
        match rows.map_err(db_err)?.into_iter().next() {
            Some(m) => convert::polling_config(m),
            None => Err(not_found("polling config", id)),
        }
    }
}

/// An interval column: seconds as INTEGER (a value beyond `i32::MAX` is refused by the CHECK
/// after saturating, never wrapped into a negative).
fn secs(v: Option<u32>) -> Option<i32> {
    v.map(|s| i32::try_from(s).unwrap_or(i32::MAX))
}

fn active_model(input: &PollingConfigInput) -> polling_config::ActiveModel {
    let i = &input.intervals;
    polling_config::ActiveModel {
        name: Set(input.name.clone()),
        priority: Set(input.priority),
        enabled: Set(input.enabled),
        card_condition: Set(input
            .card_condition
            .map(|c: CardCondition| c.as_str().to_owned())),
        card_category: Set(input
            .card_category
            .map(|c: CardCategory| c.as_str().to_owned())),
        carrier_id: Set(input.carrier_id.map(CarrierId::get)),
        realname_interval_secs: Set(secs(i.realname_interval_secs)),
        carddata_interval_secs: Set(secs(i.carddata_interval_secs)),
        package_interval_secs: Set(secs(i.package_interval_secs)),
        protect_interval_secs: Set(secs(i.protect_interval_secs)),
        ..Default::default()
    }
}

#[async_trait]
impl PollingConfigStore for PgPollingConfigStore {
    async fn list_all(&self) -> StoreResult<Vec<PollingConfig>> {
        polling_config::Entity::find()
            .order_by_asc(polling_config::Column::Priority)
            .order_by_asc(polling_config::Column::Id)
            .all(&self.db)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(convert::polling_config)
            .collect()
    }

    async fn get(&self, id: PollingConfigId) -> StoreResult<Option<PollingConfig>> {
        polling_config::Entity::find_by_id(id.get())
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(convert::polling_config)
            .transpose()
    }

    async fn insert(&self, input: &PollingConfigInput) -> StoreResult<PollingConfig> {
        let model = active_model(input).insert(&self.db).await.map_err(db_err)?;
        convert::polling_config(model)
    }

    async fn update(
        &self,
        id: PollingConfigId,
        input: &PollingConfigInput,
    ) -> StoreResult<PollingConfig> {
        let rows = polling_config::Entity::update_many()
            .set(active_model(input))
            .col_expr(polling_config::Column::UpdatedAt, Expr::current_timestamp())
            .filter(polling_config::Column::Id.eq(id.get()))
            .exec_with_returning(&self.db)
            .await;
        Self::updated(id, rows)
    }

    async fn delete(&self, id: PollingConfigId) -> StoreResult<bool> {
        let res = polling_config::Entity::delete_by_id(id.get())
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected > 0)
    }

    async fn set_enabled(&self, id: PollingConfigId, enabled: bool) -> StoreResult<PollingConfig> {
        let rows = polling_config::Entity::update_many()
            .col_expr(polling_config::Column::Enabled, Expr::value(enabled))
            .col_expr(polling_config::Column::UpdatedAt, Expr::current_timestamp())
            .filter(polling_config::Column::Id.eq(id.get()))
            .exec_with_returning(&self.db)
            .await;
        Self::updated(id, rows)
    }
}
