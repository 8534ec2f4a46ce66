//! The protect handler's forced correction (`docs/rules.md`, "Protect periods"), as a method of the
//! service so that it runs on the same path as every other stop and start: under the card's lock,
//! on the card read fresh from the store, gateway first and database after, one audit row, the same
//! metrics, the queues aligned afterwards.
//!
//! | card | protect period | network | action |
//! | --- | --- | --- | --- |
//! | real-name not satisfied, or standalone | — | — | skipped: no gateway, no evaluation |
//! | bound | stop | online | gateway stop; `network_status = 0`, `stop_reason = protect` |
//! | bound | start | stopped, not `manual` | gateway start; `network_status = 1`, `stop_reason = ''` |
//! | bound | stop / start | otherwise | consistent: nothing |
//! | bound | none | any | the decision table, as `evaluate_and_act` |
//!
//! A card stopped by an operator (`manual`) is never force-started (invariant 5).

use crate::decision::{self, Action, Decision, NothingWhy, ProtectEvidence};
use crate::{Evaluated, StopResumeError, StopResumeService, Trigger};
use chrono::{DateTime, Utc};
use domain::{Card, CardId, NetworkStatus, PackageUsage, StopReason};
use tracing::{debug, info};

/// What the protect check did.
#[derive(Debug, Clone, PartialEq)]
pub enum ProtectChecked {
    /// Real-name not satisfied, or a standalone card: nothing asked, nothing decided.
    Skipped { card: domain::Card },
    /// Corrected, found consistent, or (no period) evaluated by the decision table.
    Decided(Evaluated),
}

impl ProtectChecked {
    /// The card as it is after the check.
    pub fn card(&self) -> &domain::Card {
        match self {
            ProtectChecked::Skipped { card } => card,
            ProtectChecked::Decided(evaluated) => &evaluated.card,
        }
    }
}

/// The protect check's decision as a pure function of what it reads (the module's table):
/// `None` when the card is skipped (standalone, or real-name not satisfied); otherwise the
/// forced correction inside a period, or the decision table once no period is set.
/// [`StopResumeService::enforce_protect`] takes it on the card read under the lock; a caller
/// may take it first on its own reads to learn that there is nothing to do.
pub fn protect_decision(
    card: &Card,
    packages: &[PackageUsage],
    protect: ProtectEvidence,
    now: DateTime<Utc>,
) -> Option<Decision> {
    card.facts.device_id?;
    if !card.real_name_satisfied() {
        return None;
    }
    if !protect.active() {
        return Some(decision::decide(card, packages, protect, now));
    }
    let action = match (protect.stop, card.facts.network_status, card.stop_reason) {
        (true, NetworkStatus::Online, _) => Action::Stopped {
            reason: StopReason::Protect,
        },
        (false, NetworkStatus::Stopped, reason) if reason != Some(StopReason::Manual) => {
            Action::Started
        }
        (_, NetworkStatus::Stopped, Some(StopReason::Manual)) => Action::Nothing {
            why: NothingWhy::ManualStop,
        },
        _ => Action::Nothing {
            why: NothingWhy::ProtectPeriod,
        },
    };
    Some(Decision {
        card_id: card.id,
        action,
        evidence: decision::evidence(card, packages, protect, now),
    })
}

impl StopResumeService {
    /// The protect poll of one card: see the module's table.
    #[tracing::instrument(name = "protect_check", skip_all, fields(card_id = %card_id))]
    pub async fn enforce_protect(
        &self,
        card_id: CardId,
    ) -> Result<ProtectChecked, StopResumeError> {
        self.locked(card_id, async {
            let s = self.load_for_act(card_id).await?;
            let now = self.clock.now();
            let Some(decision) = protect_decision(&s.card, &s.packages, s.protect, now) else {
                debug!(card_id = %card_id, standalone = s.card.facts.device_id.is_none(),
                    "standalone or not real-named card: protect check skipped");
                return Ok(ProtectChecked::Skipped { card: s.card });
            };
            let in_period = s.protect.active();
            let device = s.card.facts.device_id;
            let evaluated = self.act(s.card, decision, Trigger::Protect).await?;
            if !in_period {
                return Ok(ProtectChecked::Decided(evaluated));
            }
            let device = device.map(|d| d.to_string()).unwrap_or_default();
            match evaluated.decision.action {
                Action::Stopped { .. } => info!(card_id = %card_id, device_id = %device,
                    "保护期强制停机 (protect period: card forced to stop)"),
                Action::Started => info!(card_id = %card_id, device_id = %device,
                    "保护期强制复机 (protect period: card forced to start)"),
                _ => debug!(card_id = %card_id, device_id = %device,
                    "card consistent with its protect period"),
            }
            Ok(ProtectChecked::Decided(evaluated))
        })
        .await
    }
}
