//! `tb_iot_card`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_iot_card")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique among live cards (`uq_iot_card_iccid`).
    pub iccid: String,
    pub msisdn: Option<String>,
    pub carrier_id: i64,
    /// `normal` / `industry`.
    pub card_category: String,
    pub status: i16,
    pub real_name_status: i16,
    pub network_status: i16,
    /// `''` when online.
    pub stop_reason: String,
    pub enable_polling: bool,
    pub device_id: Option<i64>,
    pub data_usage_mb: Decimal,
    pub current_month_usage_mb: Decimal,
    pub current_month_start_date: Option<Date>,
    pub last_gateway_total_mb: Decimal,
    pub last_month_total_mb: Decimal,
    /// Streamed megabytes the carrier's polled total has not shown yet (`0008`).
    pub streamed_ahead_mb: Decimal,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub deleted_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
