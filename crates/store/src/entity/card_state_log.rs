//! `tb_card_state_log`: one row per stop, start or reason change.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_card_state_log")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub iot_card_id: i64,
    pub from_status: i16,
    pub to_status: i16,
    pub stop_reason: String,
    pub trigger: String,
    pub gateway_outcome: String,
    /// The OpenTelemetry trace of the decision (migration 0011); NULL when traces are off.
    pub trace_id: Option<String>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
