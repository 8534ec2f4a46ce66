//! `tb_data_cleanup_log`: one row per cleanup run of one table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_data_cleanup_log")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub table_name: String,
    pub rows_deleted: i64,
    pub started_at: DateTimeUtc,
    pub finished_at: Option<DateTimeUtc>,
    /// `running` / `completed` / `failed`.
    pub status: String,
    pub error: Option<String>,
    /// The run the row belongs to.
    pub run_id: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
