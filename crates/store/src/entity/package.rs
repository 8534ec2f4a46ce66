//! `tb_package`: products that can be sold.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_package")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub name: String,
    /// `None`: unlimited.
    pub data_limit_mb: Option<Decimal>,
    pub virtual_ratio: Decimal,
    pub duration_days: i32,
    /// `none` / `monthly`.
    pub reset_cycle: String,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
