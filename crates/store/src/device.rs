//! [`PgDeviceStore`]: `tb_device`.

use crate::bulk::BULK_CHUNK;
use crate::convert;
use crate::entity::device;
use crate::error::{db_err, not_found};
use crate::sql::{col, stmt};
use async_trait::async_trait;
use domain::store::{DeviceStore, StoreResult};
use domain::{Device, DeviceId, NewDevice};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection,
    EntityTrait, QueryFilter, TransactionTrait, Value,
};
use std::collections::HashMap;

/// The PostgreSQL [`DeviceStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgDeviceStore {
    db: DatabaseConnection,
}

impl PgDeviceStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgDeviceStore { db }
    }
}

/// One chunk of a bulk insert; ids come back in input order by joining on `device_no` (unique
/// among live devices, so within the chunk) and sorting by the input's ordinal.
const INSERT_DEVICES: &str = r#"
WITH input AS (
    SELECT * FROM UNNEST($1::varchar[], $2::bool[]) WITH ORDINALITY AS t(device_no, enable_polling, ord)
),
inserted AS (
    INSERT INTO tb_device (device_no, enable_polling)
    SELECT device_no, enable_polling FROM input ORDER BY ord
    RETURNING id, device_no
)
SELECT inserted.id FROM inserted JOIN input USING (device_no) ORDER BY input.ord
"#;

/// Soft-deletes a device and unbinds its live cards in one statement (one transaction).
const SOFT_DELETE: &str = r#"
WITH dev AS (
    UPDATE tb_device SET deleted_at = now(), updated_at = now()
    WHERE id = $1 AND deleted_at IS NULL
    RETURNING id
),
unbound AS (
    UPDATE tb_iot_card SET device_id = NULL, updated_at = now()
    WHERE device_id IN (SELECT id FROM dev) AND deleted_at IS NULL
    RETURNING 1
)
SELECT (SELECT count(*) FROM dev) AS deleted, (SELECT count(*) FROM unbound) AS unbound
"#;

#[async_trait]
impl DeviceStore for PgDeviceStore {
    async fn get(&self, id: DeviceId) -> StoreResult<Option<Device>> {
        Ok(device::Entity::find_by_id(id.get())
            .filter(device::Column::DeletedAt.is_null())
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(convert::device))
    }

    async fn insert(&self, input: &NewDevice) -> StoreResult<Device> {
        let model = device::ActiveModel {
            device_no: Set(input.device_no.clone()),
            enable_polling: Set(input.enable_polling),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        Ok(convert::device(model))
    }

    async fn insert_bulk(&self, devices: &[NewDevice]) -> StoreResult<Vec<DeviceId>> {
        if devices.is_empty() {
            return Ok(Vec::new());
        }
        let txn = self.db.begin().await.map_err(db_err)?;
        let mut ids = Vec::with_capacity(devices.len());
        for chunk in devices.chunks(BULK_CHUNK) {
            let nos: Vec<String> = chunk.iter().map(|d| d.device_no.clone()).collect();
            let flags: Vec<bool> = chunk.iter().map(|d| d.enable_polling).collect();
            let values: [Value; 2] = [nos.into(), flags.into()];
            let rows = txn
                .query_all_raw(stmt(INSERT_DEVICES, values))
                .await
                .map_err(db_err)?;
            for row in &rows {
                ids.push(DeviceId(row.try_get_by_index::<i64>(0).map_err(db_err)?));
            }
        }
        txn.commit().await.map_err(db_err)?;
        Ok(ids)
    }

    async fn enable_polling_of(&self, ids: &[DeviceId]) -> StoreResult<HashMap<DeviceId, bool>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let ids: Vec<i64> = ids.iter().map(|d| d.get()).collect();
        let rows = self
            .db
            .query_all_raw(stmt(
                "SELECT id, enable_polling FROM tb_device WHERE id = ANY($1) AND deleted_at IS NULL",
                [ids.into()],
            ))
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| Ok((DeviceId(col(r, "id")?), col(r, "enable_polling")?)))
            .collect()
    }

    async fn set_enable_polling(&self, id: DeviceId, enabled: bool) -> StoreResult<Device> {
        let rows = device::Entity::update_many()
            .col_expr(device::Column::EnablePolling, Expr::value(enabled))
            .col_expr(device::Column::UpdatedAt, Expr::current_timestamp())
            .filter(device::Column::Id.eq(id.get()))
            .filter(device::Column::DeletedAt.is_null())
            .exec_with_returning(&self.db)
            .await
            .map_err(db_err)?;
        rows.into_iter()
            .next()
            .map(convert::device)
            .ok_or_else(|| not_found("device", id))
    }

    async fn soft_delete(&self, id: DeviceId) -> StoreResult<bool> {
        let row = self
            .db
            .query_one_raw(stmt(SOFT_DELETE, [id.get().into()]))
            .await
            .map_err(db_err)?;
        let deleted: i64 = match row {
            Some(r) => col(&r, "deleted")?,
            None => 0,
        };
        Ok(deleted > 0)
    }
}
