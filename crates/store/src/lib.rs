//! The PostgreSQL side of the polling core: sea-orm entities for every table of the schema
//! (`entity`) and the implementations of the store traits of `domain::store`
//! ([`PgCardStore`], [`PgDeviceStore`], [`PgPackageStore`], [`PgPollingConfigStore`],
//! [`PgAlertStore`], [`PgCleanupStore`], [`PgManualTriggerLogStore`], [`PgApiKeyStore`],
//! [`PgCarrierStore`], [`PgCarrierStreamStore`]),
//! bundled by [`Stores`].
//!
//! This crate owns every SQL statement of the system. Library crates never name it: they take
//! the traits (`Arc<dyn CardStore>`, ...). Only the two binaries (`cmp-api`, `cmp-worker`),
//! `bench` and `test-support` may depend on `store`. The schema itself belongs to `migrations`.
//!
//! Conventions:
//! * Database errors become [`domain::StoreError`] in one place (`error::db_err`): a unique
//!   violation is `Conflict { field }` naming the column, a foreign-key, check or bad-value
//!   error is `Invalid`, anything else (connection, pool, timeout) is `Database`.
//! * Soft-deleted cards and devices are invisible to reads by id and to every list.
//! * Megabytes are `NUMERIC` / `rust_decimal::Decimal` end to end.
//! * Writes that span tables run in one transaction behind one method.
//! * The query builder serves the simple CRUD; hot paths and batch jobs are hand-written SQL
//!   (keyset scans, `UNNEST` bulk inserts, set-based `UPDATE ... RETURNING` with CTEs).

mod alert;
mod api_key;
mod audit_log;
mod batch;
mod bulk;
mod card;
mod card_admin;
mod card_sql;
mod carrier;
mod cleanup;
mod cleanup_partitions;
mod config;
mod convert;
mod device;
pub mod entity;
mod error;
mod intent;
mod manual_trigger;
mod metrics_history;
mod ops;
mod package;
mod package_sql;
mod sql;
mod stream;
mod sync;
mod usage;
mod usage_history;

pub use alert::PgAlertStore;
pub use api_key::PgApiKeyStore;
pub use audit_log::PgAdminAuditStore;
pub use card::PgCardStore;
pub use card_admin::PgCardAdminStore;
pub use carrier::PgCarrierStore;
pub use cleanup::PgCleanupStore;
pub use config::PgPollingConfigStore;
pub use device::PgDeviceStore;
pub use error::{DatabaseRefused, db_err};
pub use manual_trigger::PgManualTriggerLogStore;
pub use metrics_history::PgMetricsHistoryStore;
pub use ops::PgMonitoringStore;
pub use package::PgPackageStore;
pub use stream::PgCarrierStreamStore;
pub use sync::PgCarrierSyncStore;
pub use usage_history::PgUsageHistoryStore;

use domain::StoreError;
use domain::store::{
    AdminAuditStore, AlertStore, ApiKeyStore, CardAdminStore, CardStore, CarrierStore,
    CarrierStreamStore, CarrierSyncStore, CleanupStore, DeviceStore, ManualTriggerLogStore,
    MetricsHistoryStore, MonitoringStore, PackageStore, PollingConfigStore, UsageHistoryStore,
};
use sea_orm::{ConnectOptions, Database, DatabaseConnection};
use std::sync::Arc;
use std::time::Duration;

/// Opens a connection pool of at most `max_connections` on `url`.
pub async fn connect(url: &str, max_connections: u32) -> Result<DatabaseConnection, StoreError> {
    let mut opts = ConnectOptions::new(url.to_owned());
    opts.max_connections(max_connections.max(1))
        .min_connections(0)
        .connect_timeout(Duration::from_secs(5))
        .acquire_timeout(Duration::from_secs(10))
        .sqlx_logging(false);
    Database::connect(opts).await.map_err(error::db_err)
}

/// Every store over one pool, as the trait objects the services take.
#[derive(Clone)]
pub struct Stores {
    pub cards: Arc<dyn CardStore>,
    pub devices: Arc<dyn DeviceStore>,
    pub packages: Arc<dyn PackageStore>,
    pub configs: Arc<dyn PollingConfigStore>,
    pub alerts: Arc<dyn AlertStore>,
    pub cleanup: Arc<dyn CleanupStore>,
    pub manual_triggers: Arc<dyn ManualTriggerLogStore>,
    pub api_keys: Arc<dyn ApiKeyStore>,
    pub monitoring: Arc<dyn MonitoringStore>,
    pub metrics_history: Arc<dyn MetricsHistoryStore>,
    pub card_admin: Arc<dyn CardAdminStore>,
    pub admin_audit: Arc<dyn AdminAuditStore>,
    /// A card's usage records by hour (the dashboard's card chart).
    pub usage_history: Arc<dyn UsageHistoryStore>,
    /// Carriers as configuration (`tb_carrier`).
    pub carriers: Arc<dyn CarrierStore>,
    /// Carriers' push streams (`tb_carrier_event`) and the usage write of their records.
    pub streams: Arc<dyn CarrierStreamStore>,
    /// Carriers' record sync (`tb_carrier_sync`) and the cards a listing page names.
    pub syncs: Arc<dyn CarrierSyncStore>,
}

impl Stores {
    pub fn new(db: DatabaseConnection) -> Self {
        Stores {
            cards: Arc::new(PgCardStore::new(db.clone())),
            devices: Arc::new(PgDeviceStore::new(db.clone())),
            packages: Arc::new(PgPackageStore::new(db.clone())),
            configs: Arc::new(PgPollingConfigStore::new(db.clone())),
            alerts: Arc::new(PgAlertStore::new(db.clone())),
            cleanup: Arc::new(PgCleanupStore::new(db.clone())),
            manual_triggers: Arc::new(PgManualTriggerLogStore::new(db.clone())),
            monitoring: Arc::new(PgMonitoringStore::new(db.clone())),
            metrics_history: Arc::new(PgMetricsHistoryStore::new(db.clone())),
            card_admin: Arc::new(PgCardAdminStore::new(db.clone())),
            admin_audit: Arc::new(PgAdminAuditStore::new(db.clone())),
            usage_history: Arc::new(PgUsageHistoryStore::new(db.clone())),
            carriers: Arc::new(PgCarrierStore::new(db.clone())),
            streams: Arc::new(PgCarrierStreamStore::new(db.clone())),
            syncs: Arc::new(PgCarrierSyncStore::new(db.clone())),
            api_keys: Arc::new(PgApiKeyStore::new(db)),
        }
    }
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}
