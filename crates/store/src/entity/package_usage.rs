//! `tb_package_usage`: a package bought for exactly one card or one device.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_package_usage")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Exactly one of `iot_card_id` and `device_id` is set (`ck_package_usage_owner`).
    pub iot_card_id: Option<i64>,
    pub device_id: Option<i64>,
    pub package_id: Option<i64>,
    pub external_id: Option<String>,
    /// `pending` / `active` / `expired` / `cancelled`.
    pub status: String,
    pub data_limit_mb: Option<Decimal>,
    pub virtual_ratio: Decimal,
    /// Virtual megabytes.
    pub used_mb: Decimal,
    pub activate_on_realname: bool,
    pub activated_at: Option<DateTimeUtc>,
    pub expires_at: Option<DateTimeUtc>,
    /// `none` / `monthly`.
    pub reset_cycle: String,
    pub next_reset_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
