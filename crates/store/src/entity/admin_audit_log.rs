//! `tb_admin_audit_log` (migration 0002).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_admin_audit_log")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub api_key_id: Option<i64>,
    pub key_name: Option<String>,
    pub method: String,
    pub route: String,
    pub target: Json,
    pub summary: Json,
    pub status: i16,
    /// The OpenTelemetry trace of the request (migration 0011); NULL when traces are off.
    pub trace_id: Option<String>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
