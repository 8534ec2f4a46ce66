//! The protect-period consistency check (seed: `polling_protect_handler.go`).
//!
//! Inside a device's protect period the card must follow the period's direction: the forced
//! correction, without the decision table (which does nothing while a period lasts). Once the
//! period has ended the card is evaluated. Both run in `stop-resume`
//! ([`StopResumeService::enforce_protect`]): under the card's lock, on the card read fresh,
//! gateway first and database after, with the audit row and metrics of every other change.
//!
//! | card | protect period | network | action |
//! | --- | --- | --- | --- |
//! | not real-named, or standalone | — | — | skip: rescheduled, no gateway, no evaluation |
//! | bound | stop | online | gateway stop; `network_status = 0`, `stop_reason = protect` |
//! | bound | start | stopped | gateway start; `network_status = 1`, `stop_reason = ''` |
//! | bound | stop / start | stopped / online | consistent: nothing |
//! | bound | none | any | `evaluate_and_act` |
//!
//! Most polls find nothing to do (no period and nothing for the decision table, or a card
//! consistent with its period). So the handler first reads the card, its packages and its
//! device's periods (together with concurrent polls: one store read of the cards, one of their
//! packages, one Redis pipeline) and applies the same table (`stop_resume::protect_decision`,
//! a pure function). Only a decision to act pays for `enforce_protect`, which takes the card's
//! lock and decides again on fresh reads.
//!
//! "Real-named" is RULES.md's real-name condition (verified, or an industry card, which carriers
//! exempt). A card stopped by an operator (`manual`) is not force-started (invariant 5).

use crate::{HandlerError, Outcome, Polled, PollingBase, TaskHandler, telemetry};
use domain::{CardId, CardIdentity, TaskType};
use stop_resume::{
    Action, ProtectChecked, ProtectEvidence, StopResumeError, StopResumeService, protect_decision,
};
use tracing::debug;

const TASK: TaskType = TaskType::Protect;

/// What the unlocked preview found.
enum Preview {
    /// Nothing to do: the poll's result (`None`: the card is gone).
    Done(Option<Polled>),
    /// The check would act: the locked path reads again and decides.
    Act,
}

/// Handles `protect` polls.
pub struct PollingProtectHandler {
    base: PollingBase,
    stop_resume: StopResumeService,
}

impl PollingProtectHandler {
    pub fn new(base: PollingBase, stop_resume: StopResumeService) -> Self {
        Self { base, stop_resume }
    }

    /// The protect check on unlocked reads: done when it decides to do nothing (skipped or
    /// consistent), or the card is gone; otherwise the locked path decides.
    async fn preview(&self, card: CardId) -> Result<Preview, HandlerError> {
        let Some(snapshot) = self.base.snapshot(card).await? else {
            return Ok(Preview::Done(None));
        };
        let protect = match snapshot.card.device_id {
            Some(device) if snapshot.card.real_name_satisfied() => {
                ProtectEvidence::from(self.base.protect_state(device).await?)
            }
            // Skipped whatever the periods are: no read.
            _ => ProtectEvidence::default(),
        };
        let decision =
            protect_decision(&snapshot.card, &snapshot.packages, protect, self.base.now());
        match decision {
            None => {
                debug!(card_id = %card, "standalone or not real-named card: protect check skipped");
                Ok(Preview::Done(Some(Polled::skipped(snapshot.card))))
            }
            Some(decision) if matches!(decision.action, Action::Nothing { .. }) => {
                Ok(Preview::Done(Some(Polled::success(snapshot.card))))
            }
            Some(_) => Ok(Preview::Act),
        }
    }

    async fn process_card(&self, card: CardIdentity) -> Result<Option<Polled>, HandlerError> {
        if let Preview::Done(polled) = self.preview(card.id).await? {
            return Ok(polled);
        }
        match self.stop_resume.enforce_protect(card.id).await {
            Ok(ProtectChecked::Skipped { card }) => Ok(Some(Polled::skipped(card))),
            Ok(ProtectChecked::Decided(evaluated)) => {
                match evaluated.decision.action {
                    Action::Stopped { .. } if evaluated.decision.evidence.protect.stop => {
                        telemetry::change(TASK, "protect_forced_stop")
                    }
                    Action::Started if evaluated.decision.evidence.protect.start => {
                        telemetry::change(TASK, "protect_forced_start")
                    }
                    _ => {}
                }
                Ok(Some(Polled::success(evaluated.card)))
            }
            Err(StopResumeError::CardNotFound(_)) => Ok(None),
            Err(error) => Err(error.into()),
        }
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
