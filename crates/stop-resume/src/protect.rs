//! The protect handler's forced correction (seed 003 `polling_protect_handler.go`; RULES.md,
//! "Protect periods"), as a method of the service so that it runs on the same path as every
//! other stop and start: under the card's lock, on the card read fresh from the store, gateway
//! first and database after, one audit row, the same metrics, the queues aligned afterwards.
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

use crate::decision::{self, Action, Decision, NothingWhy};
use crate::{Evaluated, StopResumeError, StopResumeService, Trigger};
use domain::{CardId, NetworkStatus, StopReason};
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

impl StopResumeService {
    /// The protect poll of one card: see the module's table.
    #[tracing::instrument(name = "protect_check", skip_all, fields(card_id = %card_id))]
    pub async fn enforce_protect(
        &self,
        card_id: CardId,
    ) -> Result<ProtectChecked, StopResumeError> {
        self.locked(card_id, async {
            let s = self.load_for_act(card_id).await?;
            let Some(device) = s.card.device_id else {
                debug!(card_id = %card_id, "standalone card: protect check skipped");
                return Ok(ProtectChecked::Skipped { card: s.card });
            };
            if !s.card.real_name_satisfied() {
                debug!(card_id = %card_id, "not real-named: protect check skipped");
                return Ok(ProtectChecked::Skipped { card: s.card });
            }
            let now = self.clock.now();
            if !s.protect.active() {
                let decision = decision::decide(&s.card, &s.packages, s.protect, now);
                let evaluated = self.act(s.card, decision, Trigger::Protect).await?;
                return Ok(ProtectChecked::Decided(evaluated));
            }
            let action = match (s.protect.stop, s.card.network_status, s.card.stop_reason) {
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
            let decision = Decision {
                card_id,
                action,
                evidence: decision::evidence(&s.card, &s.packages, s.protect, now),
            };
            let evaluated = self.act(s.card, decision, Trigger::Protect).await?;
            match evaluated.decision.action {
                Action::Stopped { .. } => info!(card_id = %card_id, device_id = %device,
                    "保护期强制停机: cardID={card_id}, deviceID={device} (protect period: card forced to stop)"),
                Action::Started => info!(card_id = %card_id, device_id = %device,
                    "保护期强制复机: cardID={card_id}, deviceID={device} (protect period: card forced to start)"),
                _ => debug!(card_id = %card_id, device_id = %device,
                    "card consistent with its protect period"),
            }
            Ok(ProtectChecked::Decided(evaluated))
        })
        .await
    }
}
