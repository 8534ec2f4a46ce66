//! The protect-period consistency check (`docs/rules.md`, "Protect periods").
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
//! consistent with its period). So the handler starts from the card, its packages and its
//! device's periods (together with concurrent polls: one statement for the cards and their
//! packages, one Redis pipeline) and applies the same table (`stop_resume::protect_decision`,
//! a pure function). Only a decision to act pays for `enforce_protect`, which takes the card's
//! lock and decides again on fresh reads.
//!
//! "Real-named" is the real-name condition of `docs/rules.md` (verified, or an industry card, which
//! carriers exempt). A card stopped by an operator (`manual`) is not force-started (invariant 5).

use crate::{HandlerError, Outcome, Polled, PollingDeps, TaskHandler, telemetry};
use domain::store::CardFacts;
use domain::{CardId, TaskType};
use polling_queue::ProtectState;
use stop_resume::{Action, ProtectChecked, ProtectEvidence, StopResumeError, protect_decision};
use tracing::debug;

const TASK: TaskType = TaskType::Protect;

/// What the unlocked preview found (one short-lived value per poll, as `flow::Ended`).
#[expect(clippy::large_enum_variant, reason = "one short-lived value per poll")]
enum Preview {
    /// Nothing to do: the poll's result.
    Done(Polled),
    /// The check would act: the locked path reads again and decides.
    Act,
}

/// Handles `protect` polls.
pub struct PollingProtectHandler {
    deps: PollingDeps,
}

impl PollingProtectHandler {
    pub fn new(deps: PollingDeps) -> Self {
        Self { deps }
    }

    /// The protect check on unlocked reads: done when it decides to do nothing (skipped or
    /// consistent); otherwise the locked path decides.
    fn preview(&self, snapshot: CardFacts, periods: Option<ProtectState>) -> Preview {
        let card = snapshot.card.id;
        // Unread (`None`) for a card the check skips whatever the periods are.
        let protect = periods.map(ProtectEvidence::from).unwrap_or_default();
        let decision = protect_decision(
            &snapshot.card,
            &snapshot.packages,
            protect,
            self.deps.base.now(),
        );
        match decision {
            None => {
                debug!(card_id = %card, "standalone or not real-named card: protect check skipped");
                Preview::Done(Polled::skipped(snapshot.card))
            }
            Some(decision) if matches!(decision.action, Action::Nothing { .. }) => {
                Preview::Done(Polled::success(snapshot.card))
            }
            Some(_) => Preview::Act,
        }
    }

    async fn process_card(
        &self,
        (facts, periods): (CardFacts, Option<ProtectState>),
    ) -> Result<Option<Polled>, HandlerError> {
        let card = facts.card.id;
        if let Preview::Done(polled) = self.preview(facts, periods) {
            return Ok(Some(polled));
        }
        match self.deps.stop_resume.enforce_protect(card).await {
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
        let start = self.deps.base.protect_snapshot(card);
        self.deps
            .base
            .run(TASK, card, start, |s| self.process_card(s))
            .await
    }
}
