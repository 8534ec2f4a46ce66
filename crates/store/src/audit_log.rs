//! [`PgAdminAuditStore`]: `tb_admin_audit_log`, one row per write through the admin API.

use crate::entity::admin_audit_log as log;
use crate::error::db_err;
use crate::sql::paged;
use async_trait::async_trait;
use domain::store::{AdminAuditStore, Page, Paged, StoreResult};
use domain::{AdminAudit, ApiKeyId, NewAdminAudit};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseConnection, EntityTrait, QueryOrder};

/// The PostgreSQL [`AdminAuditStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgAdminAuditStore {
    db: DatabaseConnection,
}

impl PgAdminAuditStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgAdminAuditStore { db }
    }
}

fn convert(m: log::Model) -> StoreResult<AdminAudit> {
    Ok(AdminAudit {
        id: m.id,
        entry: NewAdminAudit {
            api_key_id: m.api_key_id.map(ApiKeyId),
            key_name: m.key_name,
            method: m.method,
            route: m.route,
            target: m.target,
            summary: m.summary,
            status: u16::try_from(m.status).unwrap_or(0),
            trace_id: m.trace_id,
        },
        created_at: m.created_at,
    })
}

#[async_trait]
impl AdminAuditStore for PgAdminAuditStore {
    async fn append(&self, entry: &NewAdminAudit) -> StoreResult<AdminAudit> {
        let model = log::ActiveModel {
            api_key_id: Set(entry.api_key_id.map(ApiKeyId::get)),
            key_name: Set(entry.key_name.clone()),
            method: Set(entry.method.clone()),
            route: Set(entry.route.clone()),
            target: Set(entry.target.clone()),
            summary: Set(entry.summary.clone()),
            status: Set(i16::try_from(entry.status).unwrap_or(i16::MAX)),
            trace_id: Set(entry.trace_id.clone()),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        convert(model)
    }

    async fn list(&self, page: Page) -> StoreResult<Paged<AdminAudit>> {
        let q = log::Entity::find()
            .order_by_desc(log::Column::CreatedAt)
            .order_by_desc(log::Column::Id);
        paged(&self.db, q, page, convert).await
    }
}
