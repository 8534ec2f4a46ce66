//! `tb_polling_alert_rule`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_polling_alert_rule")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub name: String,
    pub metric: String,
    pub task_type: Option<String>,
    /// `>`, `>=`, `<`, `<=`.
    pub operator: String,
    pub threshold: Decimal,
    pub window_secs: i32,
    pub enabled: bool,
    pub webhook_url: Option<String>,
    pub cooldown_secs: i32,
    /// Only for `stops_per_minute`.
    pub stop_reason: Option<String>,
    /// The HMAC-SHA256 key of the rule's webhooks.
    pub webhook_secret: String,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
