//! [`Evaluation`]: what a stop/resume decision did, in the API's words.

use crate::Admin;
use domain::CardId;
use serde::{Deserialize, Serialize};
use stop_resume::{Action, Decision, Trigger};

/// The outcome of a decision, or why none could be taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluation {
    pub card_id: CardId,
    /// `stopped`, `started`, `reason_changed`, `nothing`, or `failed`.
    pub action: String,
    /// The stop reason set, or why nothing was done (`protect_period`, `manual_stop`, ...).
    pub reason: Option<String>,
    /// Why the evaluation failed (the card is unchanged then).
    pub error: Option<String>,
}

impl Evaluation {
    pub(crate) fn of(d: &Decision) -> Self {
        let (action, reason) = match d.action {
            Action::Stopped { reason } => ("stopped", Some(reason.as_str().to_owned())),
            Action::Started => ("started", None),
            Action::ReasonChanged { to, .. } => ("reason_changed", Some(to.as_str().to_owned())),
            Action::Nothing { why } => ("nothing", Some(why.as_str().to_owned())),
        };
        Evaluation {
            card_id: d.card_id,
            action: action.to_owned(),
            reason,
            error: None,
        }
    }

    /// Whether the card's network status or stop reason changed.
    pub(crate) fn changed(&self) -> bool {
        matches!(
            self.action.as_str(),
            "stopped" | "started" | "reason_changed"
        )
    }
}

impl Admin {
    /// Re-evaluates the card after a change of its facts (packages, device binding, polling
    /// switch). The change itself is already written: a failed evaluation (carrier down, card
    /// busy) is reported, not raised, and the card's next poll evaluates it again.
    pub(crate) async fn reevaluate(&self, card: CardId, trigger: Trigger) -> Evaluation {
        match self.stop_resume.evaluate_and_act(card, trigger).await {
            Ok(decision) => {
                let evaluation = Evaluation::of(&decision);
                if evaluation.changed()
                    && let Err(e) = self.lifecycle.on_card_status_changed(card).await
                {
                    tracing::warn!(card_id = %card, error = %e, "reschedule after an evaluation failed");
                }
                evaluation
            }
            Err(e) => {
                tracing::warn!(card_id = %card, error = %e, "re-evaluation failed; the next poll decides");
                Evaluation {
                    card_id: card,
                    action: "failed".to_owned(),
                    reason: None,
                    error: Some(e.to_string()),
                }
            }
        }
    }
}
