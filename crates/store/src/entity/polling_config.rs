//! `tb_polling_config`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_polling_config")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique (`uq_polling_config_name`).
    pub name: String,
    pub priority: i32,
    pub enabled: bool,
    pub card_condition: Option<String>,
    pub card_category: Option<String>,
    pub carrier_id: Option<i64>,
    pub realname_interval_secs: Option<i32>,
    pub carddata_interval_secs: Option<i32>,
    pub package_interval_secs: Option<i32>,
    pub protect_interval_secs: Option<i32>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
