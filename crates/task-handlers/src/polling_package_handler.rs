//! The package poll (`docs/rules.md`, "Polls").
//!
//! Asks the carrier which packages it knows for the card, writes them by `external_id` into
//! the covering owner (the device when the card is bound, else the card), then lets
//! `stop-resume` decide: a renewed package resumes a card stopped for `traffic_exhausted` or
//! `no_package`. Package processing here is data collection and store writes only.
//!
//! Most polls change nothing: the carrier reports the packages the store already holds. So the
//! handler starts from the card and its packages as read together with concurrent polls (one
//! statement, see `snapshots`), writes only when a reported package is not held exactly (the
//! store group-commits the writes of concurrent polls, then the card is read again), and asks
//! the decision table, a pure function; only when the table asks for an action does it pay for
//! `evaluate_and_act`, which takes the card's lock and decides again on fresh reads.

use crate::{HandlerError, Outcome, Polled, PollingDeps, TaskHandler};
use domain::store::CardFacts;
use domain::{CardId, PackageOwner, TaskType};
use stop_resume::{StopResumeError, Trigger};
use tracing::{debug, warn};

const TASK: TaskType = TaskType::Package;

/// Handles `package` polls.
pub struct PollingPackageHandler {
    deps: PollingDeps,
}

impl PollingPackageHandler {
    pub fn new(deps: PollingDeps) -> Self {
        Self { deps }
    }

    async fn process_card(&self, facts: CardFacts) -> Result<Option<Polled>, HandlerError> {
        let card = &facts.card;
        let reported = self
            .deps
            .gateway
            .packages(card.facts.carrier_id, &card.facts.iccid)
            .await
            .map_err(|error| {
                warn!(card_id = %card.id, %error,
                "套餐查询失败 (package query failed)");
                error
            })?;
        let snapshot = if reported.iter().all(|p| p.is_held_in(&facts.packages)) {
            // The write would change nothing (see `CarrierPackage::is_held_in`).
            facts
        } else {
            let owner = PackageOwner::covering(card.id, card.facts.device_id);
            let written = self
                .deps
                .packages
                .upsert_carrier_packages(owner, &reported)
                .await?;
            debug!(card_id = %card.id, owner = ?owner, reported = reported.len(), written,
                "carrier packages written");
            // Read after the write: the snapshot holds the packages just written.
            let Some(snapshot) = self.deps.base.snapshot(card.id).await? else {
                return Ok(None);
            };
            snapshot
        };
        let card = snapshot.card.id;
        if !self
            .deps
            .base
            .table_asks_for_action(&snapshot.card, &snapshot.packages)
        {
            return Ok(Some(Polled::success(snapshot.card)));
        }
        match self.deps.stop_resume.evaluate(card, Trigger::Package).await {
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
        let facts = self.deps.base.snapshot(card);
        self.deps
            .base
            .run(TASK, card, facts, |f| self.process_card(f))
            .await
    }
}
