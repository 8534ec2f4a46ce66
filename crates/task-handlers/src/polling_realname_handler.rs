//! The real-name poll (`docs/rules.md`, "Polls").
//!
//! Reads the card (together with the cards of concurrent polls: one statement, see
//! `snapshots`), asks the carrier for its real-name status and writes it only when it differs
//! from the card as read (the write is a compare-and-set, group-committed). Before a change is written the card joins the queues its
//! new config schedules; after it, its queues are aligned (entries no longer scheduled leave). On
//! 0 -> 1 it activates the packages waiting for real-name (the card's, or its device's) and
//! then asks `stop-resume` to evaluate, so a card stopped for `not_realname` resumes at once
//! instead of at its next usage or package poll.

use crate::{HandlerError, Outcome, Polled, PollingDeps, TaskHandler, telemetry};
use domain::store::CardFacts;
use domain::{Card, CardId, NetworkStatus, PackageOwner, RealNameStatus, StopReason, TaskType};
use stop_resume::Trigger;
use tracing::{info, warn};

const TASK: TaskType = TaskType::Realname;

/// Handles `realname` polls.
pub struct PollingRealnameHandler {
    deps: PollingDeps,
}

impl PollingRealnameHandler {
    pub fn new(deps: PollingDeps) -> Self {
        Self { deps }
    }

    async fn process_card(&self, facts: CardFacts) -> Result<Option<Polled>, HandlerError> {
        let mut card = facts.card;
        let status = self
            .deps
            .gateway
            .realname(card.facts.carrier_id, &card.facts.iccid)
            .await
            .map_err(|error| {
                warn!(card_id = %card.id, %error,
                "实名查询失败 (real-name query failed)");
                error
            })?;
        // The common poll changes nothing: compare with the card as read before the carrier was
        // asked. A status written meanwhile by another poll of the card is that poll's to
        // follow; the next poll compares again.
        if card.facts.real_name_status == status {
            return self.unchanged(card).await;
        }
        // Before the status is written, the card joins every queue the config matching the new
        // status schedules: a process that dies between the write and the alignment after it
        // must not leave the card out of them, since the next poll would find nothing changed.
        card.facts.real_name_status = status;
        self.deps.base.lifecycle.add_scheduled(&card).await?;
        // Compare-and-set in the statement: whether the status changed is the database's
        // answer, not the comparison above (another poll of the card may have written it).
        let Some(written) = self.deps.cards.set_real_name(card.id, status).await? else {
            return Ok(None);
        };
        let mut card = written.card;
        if !written.changed {
            return self.unchanged(card).await;
        }
        let verified = status == RealNameStatus::Verified;
        if verified {
            info!(card_id = %card.id, device_id = ?card.facts.device_id,
                "卡实名状态变更: 0→1，触发激活任务和复机评估 (real-name verified: packages waiting for it activated, card evaluated)");
        } else {
            warn!(card_id = %card.id, device_id = ?card.facts.device_id,
                "卡实名状态变更: 1→0 (the carrier withdrew the real-name verification)");
        }
        telemetry::change(
            TASK,
            if verified {
                "realname_0_to_1"
            } else {
                "realname_1_to_0"
            },
        );
        // Real-name is a fact config matching reads: the card may now be scheduled for other
        // task types (`docs/rules.md`, "Lifecycle", second row).
        if let Err(error) = self.deps.base.lifecycle.on_card_facts_changed(&card).await {
            warn!(card_id = %card.id, %error, "cannot align the card's queues with its new real-name status");
        }
        if verified {
            self.activate_and_evaluate(&mut card).await?;
        }
        Ok(Some(Polled::success(card)))
    }

    /// The status the carrier reports is the card's already.
    async fn unchanged(&self, mut card: Card) -> Result<Option<Polled>, HandlerError> {
        if resume_pending(&card) {
            // Verified, yet still stopped for `not_realname`: the activation or evaluation
            // that should have followed the 0 -> 1 change failed. Do them again (both are
            // idempotent) rather than wait.
            self.activate_and_evaluate(&mut card).await?;
        }
        Ok(Some(Polled::success(card)))
    }

    /// First real-name: the packages waiting for it become active, then the card is evaluated
    /// (a card stopped for `not_realname` resumes at once).
    async fn activate_and_evaluate(&self, card: &mut Card) -> Result<(), HandlerError> {
        let owner = PackageOwner::covering(card.id, card.facts.device_id);
        let activated = self
            .deps
            .packages
            .activate_on_realname(
                owner,
                self.deps.base.now(),
                self.deps.base.settings().timezone,
            )
            .await?;
        if activated > 0 {
            info!(card_id = %card.id, activated, "packages waiting for real-name activated");
        }
        *card = self
            .deps
            .stop_resume
            .evaluate(card.id, Trigger::Realname)
            .await?
            .card;
        Ok(())
    }
}

/// The card is real-named but still stopped for `not_realname`.
fn resume_pending(card: &Card) -> bool {
    card.facts.real_name_status == RealNameStatus::Verified
        && card.facts.network_status == NetworkStatus::Stopped
        && card.stop_reason == Some(StopReason::NotRealname)
}

#[async_trait::async_trait]
impl TaskHandler for PollingRealnameHandler {
    fn task_type(&self) -> TaskType {
        TASK
    }

    async fn handle(&self, card: CardId) -> Outcome {
        let facts = self.deps.base.card_now(card);
        self.deps
            .base
            .run(TASK, card, facts, |f| self.process_card(f))
            .await
    }
}
