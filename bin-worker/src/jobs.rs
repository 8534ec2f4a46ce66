//! The periodic jobs of a worker node, each run by the scheduler under a singleton lease.

use chrono::{Datelike, NaiveDate};
use domain::Clock;
use domain::store::CleanupStore;
use scheduler::{BoxError, PeriodicJob};
use std::sync::Arc;
use std::time::Duration;
use task_handlers::PackageJobs;

/// Package expiry and activation, once a minute on one node.
pub(crate) struct ActivationCheck(pub(crate) Arc<PackageJobs>);

#[async_trait::async_trait]
impl PeriodicJob for ActivationCheck {
    fn name(&self) -> &'static str {
        "package_activation"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(60)
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.0
            .activation_check()
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
}

/// Monthly data reset, checked once a minute on one node.
pub(crate) struct DataReset(pub(crate) Arc<PackageJobs>);

#[async_trait::async_trait]
impl PeriodicJob for DataReset {
    fn name(&self) -> &'static str {
        "data_reset"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(60)
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.0.data_reset().await.map(|_| ()).map_err(Into::into)
    }
}

/// Months of `tb_data_usage_record` partitions kept created ahead of the current one.
pub(crate) const PARTITIONS_AHEAD: u32 = 3;

/// Keeps the monthly partitions of `tb_data_usage_record` created from the current month to
/// [`PARTITIONS_AHEAD`] months ahead, once a day on one node (the migration only created 15
/// months; rows of a month without a partition would pile up in the default partition).
pub(crate) struct UsagePartitions {
    cleanup: Arc<dyn CleanupStore>,
    clock: Arc<dyn Clock>,
}

impl UsagePartitions {
    pub(crate) fn new(cleanup: Arc<dyn CleanupStore>, clock: Arc<dyn Clock>) -> Self {
        UsagePartitions { cleanup, clock }
    }

    /// Creates the missing partitions; returns how many.
    pub(crate) async fn ensure(&self) -> Result<u32, domain::StoreError> {
        // Partition bounds are UTC months (docs/decisions.md).
        let today = self.clock.now().date_naive();
        let month = NaiveDate::from_ymd_opt(today.year(), today.month(), 1).unwrap_or(today);
        let created = self
            .cleanup
            .ensure_usage_partitions(month, PARTITIONS_AHEAD + 1)
            .await?;
        if created > 0 {
            tracing::info!(created, from = %month, "usage partitions created ahead");
        }
        Ok(created)
    }
}

#[async_trait::async_trait]
impl PeriodicJob for UsagePartitions {
    fn name(&self) -> &'static str {
        "usage_partitions"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(24 * 3600)
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.ensure().await.map(|_| ()).map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use domain::ManualClock;
    use sea_orm::{ConnectionTrait, DbBackend, Statement};

    async fn exists(db: &sea_orm::DatabaseConnection, name: &str) -> anyhow::Result<bool> {
        let row = db
            .query_one_raw(Statement::from_string(
                DbBackend::Postgres,
                format!("SELECT to_regclass('{name}') IS NOT NULL AS present"),
            ))
            .await?
            .ok_or_else(|| anyhow::anyhow!("no row"))?;
        Ok(row.try_get("", "present")?)
    }

    #[tokio::test]
    async fn partitions_are_kept_three_months_ahead() -> anyhow::Result<()> {
        let db = test_support::TestDb::new().await?;
        let stores = store::Stores::new(db.conn.clone());
        // Far past the 15 months the migration created.
        let at = Utc
            .with_ymd_and_hms(2031, 12, 15, 3, 0, 0)
            .single()
            .ok_or_else(|| anyhow::anyhow!("time"))?;
        let clock = ManualClock::new(at);
        let job = UsagePartitions::new(stores.cleanup.clone(), Arc::new(clock.clone()));
        assert!(!exists(&db.conn, "tb_data_usage_record_203203").await?);
        assert_eq!(job.ensure().await?, 4);
        for name in ["203112", "203201", "203202", "203203"] {
            assert!(exists(&db.conn, &format!("tb_data_usage_record_{name}")).await?);
        }
        assert!(!exists(&db.conn, "tb_data_usage_record_203204").await?);
        assert_eq!(
            job.ensure().await?,
            0,
            "a second run the same day creates nothing"
        );
        clock.advance(chrono::Duration::days(20));
        assert_eq!(job.ensure().await?, 1, "a new month: one more ahead");
        Ok(())
    }
}
