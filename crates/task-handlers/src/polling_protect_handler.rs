//! The protect-period consistency check (seed: `polling_protect_handler.go`).
//!
//! Inside a device's protect period the card must follow the period's direction: this handler
//! force-corrects it with a direct gateway call, without the decision table (which does nothing
//! while a period lasts). Once the period has ended it asks `stop-resume` to evaluate.
//!
//! | card | protect period | network | action |
//! | --- | --- | --- | --- |
//! | not real-named, or standalone | — | — | skip: rescheduled, no gateway, no evaluation |
//! | bound | stop | online | gateway stop; `network_status = 0`, `stop_reason = protect` |
//! | bound | start | stopped | gateway start; `network_status = 1`, `stop_reason = ''` |
//! | bound | stop / start | stopped / online | consistent: nothing |
//! | bound | none | any | `evaluate_and_act` |
//!
//! "Real-named" is RULES.md's real-name condition (verified, or an industry card, which carriers
//! exempt). A card stopped by an operator (`manual`) is not force-started (invariant 5).

use crate::flow::apply_decision;
use crate::{HandlerError, Outcome, Polled, PollingBase, TaskHandler, telemetry};
use domain::store::CardStore;
use domain::{
    Card, CardId, DeviceId, GatewayOutcome, NetworkStatus, NewCardStateLog, StopReason, TaskType,
};
use gateway::CarrierGateway;
use polling_queue::ProtectKeys;
use std::sync::Arc;
use stop_resume::{StopResumeService, Trigger};
use tracing::{debug, info, warn};

const TASK: TaskType = TaskType::Protect;

/// Handles `protect` polls.
pub struct PollingProtectHandler {
    base: PollingBase,
    /// Forced corrections inside a protect period call the gateway directly (seed).
    gateway: Arc<dyn CarrierGateway>,
    cards: Arc<dyn CardStore>,
    protect: ProtectKeys,
    stop_resume: StopResumeService,
}

impl PollingProtectHandler {
    pub fn new(
        base: PollingBase,
        gateway: Arc<dyn CarrierGateway>,
        cards: Arc<dyn CardStore>,
        protect: ProtectKeys,
        stop_resume: StopResumeService,
    ) -> Self {
        Self {
            base,
            gateway,
            cards,
            protect,
            stop_resume,
        }
    }

    async fn process_card(&self, mut card: Card) -> Result<Polled, HandlerError> {
        if !card.real_name_satisfied() {
            debug!(card_id = %card.id, "not real-named: protect check skipped");
            return Ok(Polled::skipped(card));
        }
        let Some(device) = card.device_id else {
            debug!(card_id = %card.id, "standalone card: protect check skipped");
            return Ok(Polled::skipped(card));
        };
        let period = self.protect.protect_state(device).await?;
        let target = match (period.stop, period.start, card.network_status) {
            (true, _, NetworkStatus::Online) => NetworkStatus::Stopped,
            (false, true, NetworkStatus::Stopped)
                if card.stop_reason != Some(StopReason::Manual) =>
            {
                NetworkStatus::Online
            }
            (false, false, _) => {
                let decision = self
                    .stop_resume
                    .evaluate_and_act(card.id, Trigger::Protect)
                    .await?;
                if apply_decision(&mut card, &decision) {
                    self.base.update_card_cache(&card).await;
                }
                return Ok(Polled::success(card));
            }
            _ => {
                debug!(card_id = %card.id, device_id = %device, stop = period.stop, start = period.start,
                    "card consistent with its protect period");
                return Ok(Polled::success(card));
            }
        };
        self.force(&mut card, device, target).await?;
        Ok(Polled::success(card))
    }

    /// The forced correction: the gateway first, the database only after the carrier said yes.
    async fn force(
        &self,
        card: &mut Card,
        device: DeviceId,
        to: NetworkStatus,
    ) -> Result<(), HandlerError> {
        let (call, answer) = match to {
            NetworkStatus::Stopped => (
                "stop",
                self.gateway.stop(card.carrier_id, &card.iccid).await,
            ),
            NetworkStatus::Online => (
                "start",
                self.gateway.start(card.carrier_id, &card.iccid).await,
            ),
        };
        let got = answer.map_err(|error| {
            warn!(card_id = %card.id, device_id = %device, call, %error,
                "保护期强制修正失败: cardID={}, deviceID={device}, error={error} (protect correction failed; card unchanged)",
                card.id);
            error
        })?;
        if got != to {
            return Err(HandlerError::UnexpectedStatus {
                card_id: card.id,
                call,
                got,
            });
        }
        let stop_reason = (to == NetworkStatus::Stopped).then_some(StopReason::Protect);
        let entry = NewCardStateLog {
            card_id: card.id,
            from_status: card.network_status,
            to_status: to,
            stop_reason,
            trigger: Trigger::Protect.as_str().to_owned(),
            gateway_outcome: GatewayOutcome::Ok,
        };
        self.cards.record_state_change(&entry).await?;
        card.network_status = to;
        card.stop_reason = stop_reason;
        self.base.update_card_cache(card).await;
        if to == NetworkStatus::Stopped {
            info!(card_id = %card.id, device_id = %device,
                "保护期强制停机: cardID={}, deviceID={device} (protect period: card forced to stop)", card.id);
            telemetry::change(TASK, "protect_forced_stop");
        } else {
            info!(card_id = %card.id, device_id = %device,
                "保护期强制复机: cardID={}, deviceID={device} (protect period: card forced to start)", card.id);
            telemetry::change(TASK, "protect_forced_start");
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl TaskHandler for PollingProtectHandler {
    fn task_type(&self) -> TaskType {
        TASK
    }

    async fn handle(&self, card: CardId) -> Outcome {
        self.base.run(TASK, card, |c| self.process_card(c)).await
    }
}
