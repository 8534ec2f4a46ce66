//! `tb_polling_manual_trigger_log`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_polling_manual_trigger_log")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub who: String,
    /// Card ids or the filter, as JSON (JSONB).
    pub scope: Json,
    /// Task type names (TEXT[]).
    pub task_types: Vec<String>,
    pub count: i64,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
