//! Data cleanup (`/data-cleanup-configs`, `/data-cleanup/*`): configs per table, a preview, the
//! runs (daily in the worker, or on request) and their logs. The run itself is in
//! `cleanup_run.rs`.

use crate::{AdminError, FieldError};
use chrono::{DateTime, Utc};
use domain::store::{CleanupStore, Page, Paged};
use domain::{CleanupConfig, CleanupConfigId, CleanupConfigInput, CleanupLog, Clock};
use polling_queue::SingletonLease;
use serde::Serialize;
use std::sync::Arc;

/// The partitioned usage table: whole monthly partitions are detached and dropped.
pub const USAGE_TABLE: &str = "tb_data_usage_record";
/// Its default partition: rows of months without a partition, deleted in batches.
pub const USAGE_DEFAULT_PARTITION: &str = "tb_data_usage_record_default";

/// The tables a config may name (the CHECK of `tb_data_cleanup_config.table_name`).
pub const CLEANABLE_TABLES: [&str; 8] = [
    USAGE_TABLE,
    "tb_card_state_log",
    "tb_polling_alert_history",
    "tb_polling_manual_trigger_log",
    "tb_data_cleanup_log",
    "tb_admin_audit_log",
    "tb_polling_metrics_history",
    "tb_carrier_event",
];

pub const MAX_RETENTION_DAYS: i32 = 3650;
pub const MAX_BATCH_SIZE: i32 = 100_000;

/// The lease a run holds while it deletes, so that two runs (the daily job, a request) never
/// overlap; renewed after every batch.
pub(crate) const RUN_LEASE: &str = "data_cleanup_run";

/// What a run would remove from one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreviewRow {
    pub config_id: CleanupConfigId,
    pub table_name: String,
    pub enabled: bool,
    pub retention_days: i32,
    /// Rows older than this go.
    pub cutoff: DateTime<Utc>,
    /// Rows a run would delete (for the usage table: the partitions' estimates plus the old
    /// rows of the default partition).
    pub rows: u64,
    /// Whether `rows` holds planner estimates (whole partitions) rather than a count.
    pub estimated: bool,
    /// Monthly partitions a run would drop.
    pub partitions: Vec<String>,
    /// Why the table is skipped (e.g. it does not exist yet).
    pub note: Option<String>,
}

/// `POST /data-cleanup/run`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunStarted {
    pub run_id: String,
    pub started_at: DateTime<Utc>,
}

/// The data cleanup service; cheap to clone.
#[derive(Clone)]
pub struct CleanupService {
    pub(crate) store: Arc<dyn CleanupStore>,
    pub(crate) leases: SingletonLease,
    pub(crate) clock: Arc<dyn Clock>,
}

/// The config's problems, one per field.
pub fn validate(input: &CleanupConfigInput) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !CLEANABLE_TABLES.contains(&input.table_name.as_str()) {
        errors.push(FieldError::new(
            "/table_name",
            format!("must be one of {}", CLEANABLE_TABLES.join(", ")),
        ));
    }
    if !(1..=MAX_RETENTION_DAYS).contains(&input.retention_days) {
        errors.push(FieldError::new(
            "/retention_days",
            format!("must be between 1 and {MAX_RETENTION_DAYS}"),
        ));
    }
    if !(1..=MAX_BATCH_SIZE).contains(&input.batch_size) {
        errors.push(FieldError::new(
            "/batch_size",
            format!("must be between 1 and {MAX_BATCH_SIZE}"),
        ));
    }
    errors
}

impl CleanupService {
    pub fn new(
        store: Arc<dyn CleanupStore>,
        leases: SingletonLease,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            leases,
            clock,
        }
    }

    pub async fn list(&self, page: Page) -> Result<Paged<CleanupConfig>, AdminError> {
        Ok(self.store.list_configs(page).await?)
    }

    pub async fn get(&self, id: CleanupConfigId) -> Result<CleanupConfig, AdminError> {
        self.store
            .get_config(id)
            .await?
            .ok_or_else(|| AdminError::NotFound(format!("cleanup config {id}")))
    }

    pub async fn create(&self, input: CleanupConfigInput) -> Result<CleanupConfig, AdminError> {
        let errors = validate(&input);
        if !errors.is_empty() {
            return Err(AdminError::Invalid(errors));
        }
        self.store
            .insert_config(&input)
            .await
            .map_err(AdminError::from_store)
    }

    pub async fn update(
        &self,
        id: CleanupConfigId,
        input: CleanupConfigInput,
    ) -> Result<CleanupConfig, AdminError> {
        let errors = validate(&input);
        if !errors.is_empty() {
            return Err(AdminError::Invalid(errors));
        }
        self.get(id).await?;
        self.store
            .update_config(id, &input)
            .await
            .map_err(AdminError::from_store)
    }

    pub async fn delete(&self, id: CleanupConfigId) -> Result<(), AdminError> {
        if self.store.delete_config(id).await? {
            Ok(())
        } else {
            Err(AdminError::NotFound(format!("cleanup config {id}")))
        }
    }

    /// The cutoff of a retention: rows strictly older go.
    pub(crate) fn cutoff(&self, retention_days: i32) -> DateTime<Utc> {
        self.clock.now() - chrono::Duration::days(i64::from(retention_days))
    }

    /// `GET /data-cleanup/preview`: what a run now would remove, per config (disabled ones
    /// included, flagged). Counts per table; estimates for whole partitions.
    pub async fn preview(&self) -> Result<Vec<PreviewRow>, AdminError> {
        let configs = self
            .store
            .list_configs(Page::new(1, Page::MAX_SIZE))
            .await?;
        let mut out = Vec::new();
        for config in configs.items {
            let c = &config.config;
            let cutoff = self.cutoff(c.retention_days);
            let mut row = PreviewRow {
                config_id: config.id,
                table_name: c.table_name.clone(),
                enabled: c.enabled,
                retention_days: c.retention_days,
                cutoff,
                rows: 0,
                estimated: false,
                partitions: Vec::new(),
                note: None,
            };
            if !self.store.table_exists(&c.table_name).await? {
                row.note = Some("the table does not exist yet; skipped".into());
            } else if c.table_name == USAGE_TABLE {
                for p in self.expired_partitions(cutoff).await? {
                    row.rows += p.estimated_rows;
                    row.estimated = true;
                    row.partitions.push(p.name);
                }
                row.rows += self
                    .store
                    .count_older_than(USAGE_DEFAULT_PARTITION, cutoff)
                    .await?;
            } else {
                row.rows = self.store.count_older_than(&c.table_name, cutoff).await?;
            }
            out.push(row);
        }
        Ok(out)
    }

    /// Monthly partitions wholly older than `cutoff`, with a day of margin so that a session
    /// time zone other than UTC can never make a partition holding younger rows look expired.
    pub(crate) async fn expired_partitions(
        &self,
        cutoff: DateTime<Utc>,
    ) -> Result<Vec<domain::UsagePartition>, AdminError> {
        let parts = self.store.usage_partitions().await?;
        Ok(parts
            .into_iter()
            .filter(|p| {
                let end = p.to.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
                end.is_some_and(|end| end + chrono::Duration::days(1) <= cutoff)
            })
            .collect())
    }

    /// `GET /data-cleanup/progress`: the tables a run is working on now.
    pub async fn progress(&self) -> Result<Vec<CleanupLog>, AdminError> {
        Ok(self.store.running().await?)
    }

    /// `GET /data-cleanup/logs`.
    pub async fn logs(&self, page: Page) -> Result<Paged<CleanupLog>, AdminError> {
        Ok(self.store.logs(page).await?)
    }

    /// Creates the usage partitions of last month and the next `months_ahead` months
    /// (`cmp_ensure_usage_partitions`); idempotent. Returns how many were created.
    pub async fn ensure_partitions(&self, months_ahead: u32) -> Result<u32, AdminError> {
        let today = self.clock.now().date_naive();
        let from = today
            .checked_sub_months(chrono::Months::new(1))
            .unwrap_or(today);
        Ok(self
            .store
            .ensure_usage_partitions(from, months_ahead + 2)
            .await?)
    }
}
