//! [`Evaluation`]: what a stop/resume decision did, in the API's words. The stop/resume
//! service carries the decision out and aligns the card's queues; nothing here aligns again.

use crate::Admin;
use domain::CardId;
use serde::{Deserialize, Serialize};
use stop_resume::{Action, Decision, Trigger};

/// What an evaluation did to the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationAction {
    /// The carrier stopped the card.
    Stopped,
    /// The carrier started the card.
    Started,
    /// The card stays stopped, for another reason.
    ReasonChanged,
    /// Nothing was to be done.
    Nothing,
    /// No decision could be carried out (carrier down, card busy); the card is unchanged.
    Failed,
}

impl EvaluationAction {
    /// Whether the card's network status or stop reason changed.
    pub fn changed(self) -> bool {
        matches!(
            self,
            EvaluationAction::Stopped | EvaluationAction::Started | EvaluationAction::ReasonChanged
        )
    }
}

/// The outcome of a decision, or why none could be taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluation {
    pub card_id: CardId,
    pub action: EvaluationAction,
    /// The stop reason set, or why nothing was done (`protect_period`, `manual_stop`, ...).
    pub reason: Option<String>,
    /// Why the evaluation failed (the card is unchanged then).
    pub error: Option<String>,
}

impl Evaluation {
    pub(crate) fn of(d: &Decision) -> Self {
        let (action, reason) = match d.action {
            Action::Stopped { reason } => (EvaluationAction::Stopped, Some(reason.as_str())),
            Action::Started => (EvaluationAction::Started, None),
            Action::ReasonChanged { to, .. } => {
                (EvaluationAction::ReasonChanged, Some(to.as_str()))
            }
            Action::Nothing { why } => (EvaluationAction::Nothing, Some(why.as_str())),
        };
        Evaluation {
            card_id: d.card_id,
            action,
            reason: reason.map(str::to_owned),
            error: None,
        }
    }
}

impl Evaluation {
    /// An evaluation that could not be carried out (the card is unchanged).
    pub(crate) fn failed(card_id: CardId, error: &dyn std::fmt::Display) -> Self {
        Evaluation {
            card_id,
            action: EvaluationAction::Failed,
            reason: None,
            error: Some(error.to_string()),
        }
    }
}

impl Admin {
    /// Re-evaluates the card after a change of its facts (packages, device binding, polling
    /// switch). The change itself is already written: a failed evaluation (carrier down, card
    /// busy) is reported, not raised, and the card's next poll evaluates it again.
    pub(crate) async fn reevaluate(&self, card: CardId, trigger: Trigger) -> Evaluation {
        match self.stop_resume.evaluate_and_act(card, trigger).await {
            // The stop/resume service aligned the card's queues with what it wrote.
            Ok(decision) => Evaluation::of(&decision),
            Err(e) => {
                tracing::warn!(card_id = %card, error = %crate::Chain(&e), "re-evaluation failed; the next poll decides");
                Evaluation::failed(card, &e)
            }
        }
    }
}
