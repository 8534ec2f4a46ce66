//! `tb_data_usage_record`: usage history, partitioned by month on `recorded_at`, hence the
//! composite primary key.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_data_usage_record")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i64,
    pub iot_card_id: i64,
    pub delta_mb: Decimal,
    pub month_total_mb: Decimal,
    #[sea_orm(primary_key, auto_increment = false)]
    pub recorded_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
