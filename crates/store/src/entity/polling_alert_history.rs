//! `tb_polling_alert_history` (rows go with their rule: `ON DELETE CASCADE`).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_polling_alert_history")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub rule_id: i64,
    pub value: Decimal,
    pub fired_at: DateTimeUtc,
    pub resolved_at: Option<DateTimeUtc>,
    pub notified: bool,
    pub notify_error: Option<String>,
    pub resolve_notified: bool,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
