//! The package poll (seed: `polling_package_handler.go`).
//!
//! Asks the carrier which packages it knows for the card, writes them by `external_id` into
//! the covering owner (the device when the card is bound, else the card), then lets
//! `stop-resume` decide: a renewed package resumes a card stopped for `traffic_exhausted` or
//! `no_package`. Package processing here is data collection and store writes only.

use crate::{HandlerError, Outcome, Polled, PollingBase, TaskHandler};
use domain::store::PackageStore;
use domain::{CardId, CardIdentity, PackageOwner, TaskType};
use gateway::CarrierGateway;
use std::sync::Arc;
use stop_resume::{StopResumeError, StopResumeService, Trigger};
use tracing::{debug, warn};

const TASK: TaskType = TaskType::Package;

/// Handles `package` polls.
pub struct PollingPackageHandler {
    base: PollingBase,
    gateway: Arc<dyn CarrierGateway>,
    packages: Arc<dyn PackageStore>,
    stop_resume: StopResumeService,
}

impl PollingPackageHandler {
    pub fn new(
        base: PollingBase,
        gateway: Arc<dyn CarrierGateway>,
        packages: Arc<dyn PackageStore>,
        stop_resume: StopResumeService,
    ) -> Self {
        Self {
            base,
            gateway,
            packages,
            stop_resume,
        }
    }

    async fn process_card(&self, card: CardIdentity) -> Result<Option<Polled>, HandlerError> {
        let reported = self
            .gateway
            .packages(card.carrier_id, &card.iccid)
            .await
            .map_err(|error| {
                warn!(card_id = %card.id, %error,
                "套餐查询失败: cardID={}, error={error} (package query failed)", card.id);
                error
            })?;
        let owner = PackageOwner::covering(card.id, card.device_id);
        let written = self
            .packages
            .upsert_carrier_packages(owner, &reported)
            .await?;
        debug!(card_id = %card.id, owner = ?owner, reported = reported.len(), written,
            "carrier packages written");
        match self.stop_resume.evaluate(card.id, Trigger::Package).await {
            Ok(evaluated) => Ok(Some(Polled::success(evaluated.card))),
            Err(StopResumeError::CardNotFound(_)) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }
}

#[async_trait::async_trait]
impl TaskHandler for PollingPackageHandler {
    fn task_type(&self) -> TaskType {
        TASK
    }

    async fn handle(&self, card: CardId) -> Outcome {
        self.base.run(TASK, card, |c| self.process_card(c)).await
    }
}
