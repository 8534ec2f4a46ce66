//! The package jobs of a worker node, each run by the scheduler under a singleton lease (the
//! admin jobs, usage partitions among them, are in `admin_jobs`).

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
