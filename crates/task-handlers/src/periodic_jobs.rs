//! The package jobs as the scheduler runs them: [`ActivationCheck`] and [`DataReset`], each
//! once a minute on one node of the cluster under a singleton lease, over [`PackageJobs`].

use crate::PackageJobs;
use domain::periodic::{BoxError, PeriodicJob};
use std::sync::Arc;
use std::time::Duration;

/// Package expiry and activation, once a minute on one node.
pub struct ActivationCheck(pub Arc<PackageJobs>);

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
pub struct DataReset(pub Arc<PackageJobs>);

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
