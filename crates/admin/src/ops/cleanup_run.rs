//! One data cleanup run: every enabled config in turn, under the run lease. For the partitioned
//! usage table, monthly partitions wholly past the retention are detached and dropped, then old
//! rows of the default partition are deleted in batches; other tables are deleted in batches of
//! the config's size, each batch its own statement and so its own short transaction. One log
//! row per table (`running`, then `completed` or `failed` with the error); the rows already
//! deleted stay deleted, the rest are untouched.

use super::cleanup::{CleanupService, RUN_LEASE, RunStarted, USAGE_DEFAULT_PARTITION, USAGE_TABLE};
use crate::{AdminError, Chain};
use domain::CleanupConfig;
use domain::store::Page;
use polling_queue::LeaseToken;
use serde::Serialize;
use std::time::Duration;

/// How long the run lease lives without a renewal (a batch must finish within it).
const RUN_LEASE_TTL: Duration = Duration::from_secs(120);

/// What a run did to one table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TableReport {
    pub table_name: String,
    pub rows_deleted: u64,
    /// DELETE statements run (each its own transaction).
    pub batches: u64,
    pub partitions_dropped: Vec<String>,
    /// `completed`, `failed` or `skipped`.
    pub status: String,
    pub error: Option<String>,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub tables: Vec<TableReport>,
}

impl CleanupService {
    /// Starts a run in the background and answers its id at once (`POST /data-cleanup/run`,
    /// and the worker's daily job). Refused with `Conflict` while another run holds the lease.
    pub async fn start_run(&self) -> Result<RunStarted, AdminError> {
        let lease = self.take_lease().await?;
        let run_id = uuid::Uuid::new_v4().to_string();
        let started = RunStarted {
            run_id: run_id.clone(),
            started_at: self.clock.now(),
        };
        let this = self.clone();
        tokio::spawn(async move {
            match this.run_holding(&run_id, &lease).await {
                Ok(report) => tracing::info!(
                    run_id,
                    tables = report.tables.len(),
                    "data cleanup run done"
                ),
                Err(e) => tracing::warn!(run_id, error = %Chain(&e), "data cleanup run failed"),
            }
            let _ = this.leases.release(lease).await;
        });
        Ok(started)
    }

    /// Runs a cleanup to the end in this task (tests, `cmp-worker`'s own call).
    pub async fn run_now(&self) -> Result<RunReport, AdminError> {
        let lease = self.take_lease().await?;
        let run_id = uuid::Uuid::new_v4().to_string();
        let report = self.run_holding(&run_id, &lease).await;
        let _ = self.leases.release(lease).await;
        report
    }

    async fn take_lease(&self) -> Result<LeaseToken, AdminError> {
        self.leases
            .try_acquire(RUN_LEASE, RUN_LEASE_TTL)
            .await
            .map_err(AdminError::Queue)?
            .ok_or_else(|| AdminError::Conflict {
                field: "a data cleanup run".into(),
            })
    }

    async fn run_holding(&self, run_id: &str, lease: &LeaseToken) -> Result<RunReport, AdminError> {
        // Holding the lease, no other run is alive: rows still `running` were left by a process
        // that died mid-run.
        for stale in self.store.running().await? {
            self.store
                .finish_log(
                    stale.id,
                    stale.rows_deleted,
                    Some("interrupted: the process running it stopped".into()),
                )
                .await?;
        }
        let configs = self
            .store
            .list_configs(Page::new(1, Page::MAX_SIZE))
            .await?;
        let mut report = RunReport {
            run_id: run_id.to_owned(),
            tables: Vec::new(),
        };
        for config in configs.items.into_iter().filter(|c| c.config.enabled) {
            let table = config.config.table_name.clone();
            if !self.store.table_exists(&table).await? {
                tracing::info!(table, "data cleanup: the table does not exist yet; skipped");
                report.tables.push(TableReport {
                    table_name: table,
                    status: "skipped".into(),
                    error: Some("the table does not exist yet".into()),
                    ..TableReport::default()
                });
                continue;
            }
            let log = self
                .store
                .start_log(&table, Some(run_id.to_owned()))
                .await?;
            let mut t = TableReport {
                table_name: table.clone(),
                ..TableReport::default()
            };
            let outcome = self.clean_table(&config, lease, log.id, &mut t).await;
            let error = outcome.err().map(|e| Chain(&e).to_string());
            self.store
                .finish_log(
                    log.id,
                    i64::try_from(t.rows_deleted).unwrap_or(i64::MAX),
                    error.clone(),
                )
                .await?;
            t.status = if error.is_some() {
                "failed"
            } else {
                "completed"
            }
            .into();
            if let Some(e) = &error {
                tracing::warn!(table, error = e, "data cleanup of a table failed");
            }
            t.error = error;
            report.tables.push(t);
        }
        Ok(report)
    }

    async fn clean_table(
        &self,
        config: &CleanupConfig,
        lease: &LeaseToken,
        log_id: i64,
        t: &mut TableReport,
    ) -> Result<(), AdminError> {
        let c = &config.config;
        let cutoff = self.cutoff(c.retention_days);
        let batch = u32::try_from(c.batch_size.max(1)).unwrap_or(1);
        let mut target = c.table_name.as_str();
        if target == USAGE_TABLE {
            for p in self.expired_partitions(cutoff).await? {
                self.store.drop_usage_partition(&p.name).await?;
                t.rows_deleted += p.estimated_rows;
                tracing::info!(
                    partition = p.name,
                    rows = p.estimated_rows,
                    "usage partition dropped"
                );
                t.partitions_dropped.push(p.name);
            }
            target = USAGE_DEFAULT_PARTITION;
        }
        loop {
            let n = self.store.delete_older_than(target, cutoff, batch).await?;
            t.batches += 1;
            t.rows_deleted += n;
            if n < u64::from(batch) {
                return Ok(());
            }
            self.store
                .set_progress(log_id, i64::try_from(t.rows_deleted).unwrap_or(i64::MAX))
                .await?;
            let held = self.leases.renew(lease).await.map_err(AdminError::Queue)?;
            if !held {
                return Err(AdminError::LeaseLost("data cleanup"));
            }
        }
    }
}
