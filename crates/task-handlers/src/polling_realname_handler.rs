//! The real-name poll (seed: `polling_realname_handler.go`).
//!
//! Asks the carrier for the card's real-name status and writes it only when it changed. On
//! 0 -> 1 it activates the packages waiting for real-name (the card's, or its device's) and
//! then asks `stop-resume` to evaluate, so a card stopped for `not_realname` resumes at once
//! instead of at its next usage or package poll.

use crate::flow::apply_decision;
use crate::{HandlerError, Outcome, Polled, PollingBase, TaskHandler, telemetry};
use domain::store::{CardStore, PackageStore};
use domain::{Card, CardId, NetworkStatus, PackageOwner, RealNameStatus, StopReason, TaskType};
use gateway::CarrierGateway;
use std::sync::Arc;
use stop_resume::{StopResumeService, Trigger};
use tracing::{info, warn};

const TASK: TaskType = TaskType::Realname;

/// Handles `realname` polls.
pub struct PollingRealnameHandler {
    base: PollingBase,
    gateway: Arc<dyn CarrierGateway>,
    cards: Arc<dyn CardStore>,
    packages: Arc<dyn PackageStore>,
    stop_resume: StopResumeService,
}

impl PollingRealnameHandler {
    pub fn new(
        base: PollingBase,
        gateway: Arc<dyn CarrierGateway>,
        cards: Arc<dyn CardStore>,
        packages: Arc<dyn PackageStore>,
        stop_resume: StopResumeService,
    ) -> Self {
        Self {
            base,
            gateway,
            cards,
            packages,
            stop_resume,
        }
    }

    async fn process_card(&self, mut card: Card) -> Result<Polled, HandlerError> {
        let status = self
            .gateway
            .realname(card.carrier_id, &card.iccid)
            .await
            .map_err(|error| {
                warn!(card_id = %card.id, %error,
                "实名查询失败: cardID={}, error={error} (real-name query failed)", card.id);
                error
            })?;
        let before = card.real_name_status;
        if status == before {
            if resume_pending(&card) {
                // Verified, yet still stopped for `not_realname`: the evaluation that should
                // have followed the 0 -> 1 change failed. Ask again rather than wait.
                self.evaluate(&mut card).await?;
            }
            return Ok(Polled::success(card));
        }
        let verified = status == RealNameStatus::Verified;
        if verified {
            // Activation first: it is idempotent, so if the write below fails the retry sees
            // 0 -> 1 again and nothing is activated twice.
            let owner = PackageOwner::covering(card.id, card.device_id);
            let activated = self
                .packages
                .activate_on_realname(owner, self.base.now(), self.base.settings().timezone)
                .await?;
            info!(card_id = %card.id, device_id = ?card.device_id, activated,
                "卡实名状态变更: cardID={}, 0→1，触发激活任务和复机评估 (real-name verified: packages waiting for it activated, card evaluated)",
                card.id);
        } else {
            warn!(card_id = %card.id, device_id = ?card.device_id,
                "卡实名状态变更: cardID={}, 1→0 (the carrier withdrew the real-name verification)",
                card.id);
        }
        self.cards.set_real_name(card.id, status).await?;
        card.real_name_status = status;
        self.base.update_card_cache(&card).await;
        telemetry::change(
            TASK,
            if verified {
                "realname_0_to_1"
            } else {
                "realname_1_to_0"
            },
        );
        if verified {
            self.evaluate(&mut card).await?;
        }
        Ok(Polled::success(card))
    }

    async fn evaluate(&self, card: &mut Card) -> Result<(), HandlerError> {
        let decision = self
            .stop_resume
            .evaluate_and_act(card.id, Trigger::Realname)
            .await?;
        if apply_decision(card, &decision) {
            self.base.update_card_cache(card).await;
        }
        Ok(())
    }
}

/// The card is real-named but still stopped for `not_realname`.
fn resume_pending(card: &Card) -> bool {
    card.real_name_status == RealNameStatus::Verified
        && card.network_status == NetworkStatus::Stopped
        && card.stop_reason == Some(StopReason::NotRealname)
}

#[async_trait::async_trait]
impl TaskHandler for PollingRealnameHandler {
    fn task_type(&self) -> TaskType {
        TASK
    }

    async fn handle(&self, card: CardId) -> Outcome {
        self.base.run(TASK, card, |c| self.process_card(c)).await
    }
}
