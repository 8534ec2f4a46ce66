//! `tb_carrier`.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tb_carrier")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub carrier_id: i64,
    pub name: String,
    /// `cmp-json`, `onelink`, `ctcc-5gcmp`, `control-center`, `1nce`, `emnify`.
    pub protocol: String,
    pub base_url: String,
    /// The protocol's credential fields; prints as `***` so a row formatted into a log line or
    /// an error carries no credential.
    #[sea_orm(column_type = "JsonBinary")]
    pub credentials: StoredCredentials,
    pub rate_limit_per_sec: i32,
    pub max_concurrent: i32,
    pub batch_size: i32,
    pub timeout_ms: i32,
    /// `domain::AssumedCall` names (`usage_batch`, ...).
    pub assumed_calls: Vec<String>,
    pub enabled: bool,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

/// `tb_carrier.credentials` as stored: a JSON object of strings. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, FromJsonQueryResult)]
#[serde(transparent)]
pub struct StoredCredentials(pub serde_json::Value);

impl fmt::Debug for StoredCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
