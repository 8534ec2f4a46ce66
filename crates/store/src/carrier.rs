//! [`PgCarrierStore`]: `tb_carrier`, carriers as configuration.
//!
//! Credentials go in as [`Credentials::to_stored_json`] and come out deserialised into
//! [`Credentials`]; no error of this module carries a row or a credential value (a row that
//! cannot be read back is named by its id and column only).

use crate::entity::carrier::{self, StoredCredentials};
use crate::error::{bad_column, db_err, not_found};
use crate::sql::{col, models, paged, stmt};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::store::{CarrierStore, Page, Paged, StoreResult};
use domain::{
    AssumedCall, CarrierAccount, CarrierAccountInput, CarrierId, CarrierLimits, CarrierProtocol,
    Credentials, StoreError,
};
use sea_orm::{ConnectionTrait, DatabaseConnection, EntityTrait, QueryOrder, Value};

/// The PostgreSQL [`CarrierStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgCarrierStore {
    db: DatabaseConnection,
}

impl PgCarrierStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgCarrierStore { db }
    }
}

const INSERT: &str = r#"
INSERT INTO tb_carrier (carrier_id, name, protocol, base_url, credentials, rate_limit_per_sec,
                        max_concurrent, batch_size, timeout_ms, enabled, assumed_calls)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
RETURNING *
"#;

/// `$5` NULL keeps the stored credentials.
const UPDATE: &str = r#"
UPDATE tb_carrier
SET name = $2, protocol = $3, base_url = $4, credentials = COALESCE($5, credentials),
    rate_limit_per_sec = $6, max_concurrent = $7, batch_size = $8, timeout_ms = $9,
    enabled = $10, assumed_calls = $11, updated_at = now()
WHERE carrier_id = $1
RETURNING *
"#;

const SET_ENABLED: &str = r#"
UPDATE tb_carrier SET enabled = $2, updated_at = now() WHERE carrier_id = $1 RETURNING *
"#;

const VERSION: &str = "SELECT max(updated_at) AS at, count(*) AS n FROM tb_carrier";

/// A limit as an `INT` column; `CarrierLimits::validate` keeps them far below `i32::MAX`, and
/// the table's CHECKs refuse what slips through.
fn int(v: u32) -> Value {
    i32::try_from(v).unwrap_or(i32::MAX).into()
}

/// The eleven values of [`INSERT`] / [`UPDATE`], in order.
fn values(input: &CarrierAccountInput) -> Vec<Value> {
    let credentials: Value = match &input.credentials {
        Some(c) => c.to_stored_json().into(),
        None => Value::Json(None),
    };
    vec![
        input.carrier_id.get().into(),
        input.name.trim().to_owned().into(),
        input.protocol.as_str().into(),
        input.base_url.trim().to_owned().into(),
        credentials,
        int(input.limits.rate_limit_per_sec),
        int(input.limits.max_concurrent),
        int(input.limits.batch_size),
        int(input.limits.timeout_ms),
        input.enabled.into(),
        input.limits.assumed_calls.names().into(),
    ]
}

fn limit(id: i64, column: &str, v: i32) -> StoreResult<u32> {
    u32::try_from(v).map_err(|_| bad_column(column, format_args!("negative in carrier {id}")))
}

/// A row as the domain's account. Errors name the carrier and the column, never a value.
fn account(m: carrier::Model) -> StoreResult<CarrierAccount> {
    let id = m.carrier_id;
    let protocol: CarrierProtocol = m
        .protocol
        .parse()
        .map_err(|_| bad_column("protocol", format_args!("unknown protocol in carrier {id}")))?;
    let StoredCredentials(json) = m.credentials;
    // The serde message may quote the value: it is dropped.
    let credentials: Credentials = serde_json::from_value(json).map_err(|_| {
        bad_column(
            "credentials",
            format_args!("not an object of strings in carrier {id}"),
        )
    })?;
    Ok(CarrierAccount {
        carrier_id: CarrierId(id),
        name: m.name,
        protocol,
        base_url: m.base_url,
        credentials,
        limits: CarrierLimits {
            rate_limit_per_sec: limit(id, "rate_limit_per_sec", m.rate_limit_per_sec)?,
            max_concurrent: limit(id, "max_concurrent", m.max_concurrent)?,
            batch_size: limit(id, "batch_size", m.batch_size)?,
            timeout_ms: limit(id, "timeout_ms", m.timeout_ms)?,
            assumed_calls: m
                .assumed_calls
                .iter()
                .map(|name| name.parse::<AssumedCall>())
                .collect::<Result<_, _>>()
                .map_err(|()| {
                    bad_column(
                        "assumed_calls",
                        format_args!("an unknown call in carrier {id}"),
                    )
                })?,
        },
        enabled: m.enabled,
        created_at: m.created_at,
        updated_at: m.updated_at,
    })
}

impl PgCarrierStore {
    async fn one(&self, sql: &str, values: Vec<Value>) -> StoreResult<Option<CarrierAccount>> {
        let rows = models::<carrier::Entity, _>(&self.db, stmt(sql, values)).await?;
        rows.into_iter().next().map(account).transpose()
    }
}

#[async_trait]
impl CarrierStore for PgCarrierStore {
    async fn list(&self, page: Page) -> StoreResult<Paged<CarrierAccount>> {
        let q = carrier::Entity::find().order_by_asc(carrier::Column::CarrierId);
        paged(&self.db, q, page, account).await
    }

    async fn all(&self) -> StoreResult<Vec<CarrierAccount>> {
        carrier::Entity::find()
            .order_by_asc(carrier::Column::CarrierId)
            .all(&self.db)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(account)
            .collect()
    }

    async fn get(&self, id: CarrierId) -> StoreResult<Option<CarrierAccount>> {
        carrier::Entity::find_by_id(id.get())
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(account)
            .transpose()
    }

    async fn insert(&self, input: &CarrierAccountInput) -> StoreResult<CarrierAccount> {
        if input.credentials.is_none() {
            return Err(StoreError::Invalid(
                "credentials: required for a new carrier".to_owned(),
            ));
        }
        self.one(INSERT, values(input))
            .await?
            .ok_or_else(|| StoreError::Database("insert returned no row".into()))
    }

    async fn update(&self, input: &CarrierAccountInput) -> StoreResult<CarrierAccount> {
        self.one(UPDATE, values(input))
            .await?
            .ok_or_else(|| not_found("carrier", input.carrier_id))
    }

    async fn set_enabled(
        &self,
        id: CarrierId,
        enabled: bool,
    ) -> StoreResult<Option<CarrierAccount>> {
        self.one(SET_ENABLED, vec![id.get().into(), enabled.into()])
            .await
    }

    async fn version(&self) -> StoreResult<(Option<DateTime<Utc>>, u64)> {
        let row = self
            .db
            .query_one_raw(stmt(VERSION, []))
            .await
            .map_err(db_err)?;
        let Some(row) = row else {
            return Ok((None, 0));
        };
        let at: Option<DateTime<Utc>> = col(&row, "at")?;
        let n: i64 = col(&row, "n")?;
        Ok((at, u64::try_from(n).unwrap_or(0)))
    }
}
