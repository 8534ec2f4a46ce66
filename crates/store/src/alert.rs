//! [`PgAlertStore`]: `tb_polling_alert_rule` and `tb_polling_alert_history`.

use crate::convert;
use crate::entity::{polling_alert_history, polling_alert_rule};
use crate::error::{db_err, not_found};
use crate::sql::paged;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::store::{AlertStore, Page, Paged, StoreResult};
use domain::{AlertHistory, AlertRule, AlertRuleId, AlertRuleInput};
use rust_decimal::Decimal;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait,
    ActiveValue::{NotSet, Set},
    ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
};

/// The PostgreSQL [`AlertStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgAlertStore {
    db: DatabaseConnection,
}

impl PgAlertStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgAlertStore { db }
    }
}

fn active_model(rule: &AlertRuleInput) -> polling_alert_rule::ActiveModel {
    polling_alert_rule::ActiveModel {
        name: Set(rule.name.clone()),
        metric: Set(rule.metric.as_str().to_owned()),
        stop_reason: Set(rule.stop_reason.map(|r| r.as_str().to_owned())),
        // Absent keeps the stored secret (update) or lets the database generate one (insert).
        webhook_secret: match &rule.webhook_secret {
            Some(secret) => Set(secret.clone()),
            None => NotSet,
        },
        task_type: Set(rule.task_type.map(|t| t.as_str().to_owned())),
        operator: Set(rule.operator.as_str().to_owned()),
        threshold: Set(rule.threshold),
        window_secs: Set(rule.window_secs),
        enabled: Set(rule.enabled),
        webhook_url: Set(rule.webhook_url.clone()),
        cooldown_secs: Set(rule.cooldown_secs),
        ..Default::default()
    }
}

#[async_trait]
impl AlertStore for PgAlertStore {
    async fn list_rules(&self, page: Page) -> StoreResult<Paged<AlertRule>> {
        let q = polling_alert_rule::Entity::find().order_by_asc(polling_alert_rule::Column::Id);
        paged(&self.db, q, page, convert::alert_rule).await
    }

    async fn enabled_rules(&self) -> StoreResult<Vec<AlertRule>> {
        polling_alert_rule::Entity::find()
            .filter(polling_alert_rule::Column::Enabled.eq(true))
            .order_by_asc(polling_alert_rule::Column::Id)
            .all(&self.db)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(convert::alert_rule)
            .collect()
    }

    async fn get_rule(&self, id: AlertRuleId) -> StoreResult<Option<AlertRule>> {
        polling_alert_rule::Entity::find_by_id(id.get())
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(convert::alert_rule)
            .transpose()
    }

    async fn insert_rule(&self, rule: &AlertRuleInput) -> StoreResult<AlertRule> {
        let model = active_model(rule).insert(&self.db).await.map_err(db_err)?;
        convert::alert_rule(model)
    }

    async fn update_rule(&self, id: AlertRuleId, rule: &AlertRuleInput) -> StoreResult<AlertRule> {
        let rows = polling_alert_rule::Entity::update_many()
            .set(active_model(rule))
            .col_expr(
                polling_alert_rule::Column::UpdatedAt,
                Expr::current_timestamp(),
            )
            .filter(polling_alert_rule::Column::Id.eq(id.get()))
            .exec_with_returning(&self.db)
            .await
            .map_err(db_err)?;
        match rows.into_iter().next() {
            Some(m) => convert::alert_rule(m),
            None => Err(not_found("alert rule", id)),
        }
    }

    async fn delete_rule(&self, id: AlertRuleId) -> StoreResult<bool> {
        let res = polling_alert_rule::Entity::delete_by_id(id.get())
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected > 0)
    }

    async fn record_firing(
        &self,
        rule: AlertRuleId,
        value: Decimal,
        at: DateTime<Utc>,
    ) -> StoreResult<AlertHistory> {
        let model = polling_alert_history::ActiveModel {
            rule_id: Set(rule.get()),
            value: Set(value),
            fired_at: Set(at),
            notified: Set(false),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        Ok(convert::alert_history(model))
    }

    async fn open_firing(&self, rule: AlertRuleId) -> StoreResult<Option<AlertHistory>> {
        Ok(polling_alert_history::Entity::find()
            .filter(polling_alert_history::Column::RuleId.eq(rule.get()))
            .filter(polling_alert_history::Column::ResolvedAt.is_null())
            .order_by_desc(polling_alert_history::Column::Id)
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(convert::alert_history))
    }

    async fn last_fired_at(&self, rule: AlertRuleId) -> StoreResult<Option<DateTime<Utc>>> {
        Ok(polling_alert_history::Entity::find()
            .filter(polling_alert_history::Column::RuleId.eq(rule.get()))
            .order_by_desc(polling_alert_history::Column::FiredAt)
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(|m| m.fired_at))
    }

    async fn open_firings(&self) -> StoreResult<Vec<AlertHistory>> {
        Ok(polling_alert_history::Entity::find()
            .filter(polling_alert_history::Column::ResolvedAt.is_null())
            .order_by_asc(polling_alert_history::Column::Id)
            .all(&self.db)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(convert::alert_history)
            .collect())
    }

    async fn set_notified(
        &self,
        id: i64,
        resolution: bool,
        delivered: bool,
        error: Option<String>,
    ) -> StoreResult<()> {
        let column = if resolution {
            polling_alert_history::Column::ResolveNotified
        } else {
            polling_alert_history::Column::Notified
        };
        polling_alert_history::Entity::update_many()
            .col_expr(column, Expr::value(delivered))
            .col_expr(
                polling_alert_history::Column::NotifyError,
                Expr::value(error),
            )
            .filter(polling_alert_history::Column::Id.eq(id))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn resolve(&self, rule: AlertRuleId, at: DateTime<Utc>) -> StoreResult<u64> {
        let res = polling_alert_history::Entity::update_many()
            .col_expr(polling_alert_history::Column::ResolvedAt, Expr::value(at))
            .filter(polling_alert_history::Column::RuleId.eq(rule.get()))
            .filter(polling_alert_history::Column::ResolvedAt.is_null())
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected)
    }

    async fn history(
        &self,
        rule: Option<AlertRuleId>,
        page: Page,
    ) -> StoreResult<Paged<AlertHistory>> {
        let mut q = polling_alert_history::Entity::find()
            .order_by_desc(polling_alert_history::Column::FiredAt)
            .order_by_desc(polling_alert_history::Column::Id);
        if let Some(rule) = rule {
            q = q.filter(polling_alert_history::Column::RuleId.eq(rule.get()));
        }
        paged(&self.db, q, page, |m| Ok(convert::alert_history(m))).await
    }
}
