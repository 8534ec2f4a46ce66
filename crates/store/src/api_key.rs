//! [`PgApiKeyStore`]: `tb_api_key`.

use crate::convert;
use crate::entity::api_key;
use crate::error::db_err;
use crate::sql::{models, stmt};
use async_trait::async_trait;
use domain::store::{ApiKeyStore, StoreResult};
use domain::{ApiKey, ApiKeyId, ApiKeyRole};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter,
};

/// The PostgreSQL [`ApiKeyStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgApiKeyStore {
    db: DatabaseConnection,
}

impl PgApiKeyStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgApiKeyStore { db }
    }
}

/// Finds the live key and touches `last_used_at`, at most once a minute per key: every API
/// request authenticates, and a durable write per request on one hot row would cap the API at
/// the single-row update rate (~2K/s here) and make replicas queue on its lock. The answer
/// carries the fresh `last_used_at` when it was touched.
const AUTHENTICATE: &str = r#"
WITH k AS (
    SELECT * FROM tb_api_key WHERE key_hash = $1 AND revoked_at IS NULL
),
touched AS (
    UPDATE tb_api_key a SET last_used_at = now()
    FROM k
    WHERE a.id = k.id AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '60 seconds')
    RETURNING a.*
)
SELECT * FROM touched
UNION ALL
SELECT * FROM k WHERE NOT EXISTS (SELECT 1 FROM touched)
"#;

#[async_trait]
impl ApiKeyStore for PgApiKeyStore {
    async fn insert(&self, name: &str, role: ApiKeyRole, key_hash: &str) -> StoreResult<ApiKey> {
        let model = api_key::ActiveModel {
            name: Set(name.to_owned()),
            role: Set(role.as_str().to_owned()),
            key_hash: Set(key_hash.to_owned()),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        convert::api_key(model)
    }

    async fn authenticate(&self, key_hash: &str) -> StoreResult<Option<ApiKey>> {
        let rows =
            models::<api_key::Entity, _>(&self.db, stmt(AUTHENTICATE, [key_hash.into()])).await?;
        rows.into_iter().next().map(convert::api_key).transpose()
    }

    async fn revoke(&self, id: ApiKeyId) -> StoreResult<bool> {
        let res = api_key::Entity::update_many()
            .col_expr(api_key::Column::RevokedAt, Expr::current_timestamp())
            .filter(api_key::Column::Id.eq(id.get()))
            .filter(api_key::Column::RevokedAt.is_null())
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected > 0)
    }
}
