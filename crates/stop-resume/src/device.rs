//! An operator's stop or start of a whole device (`POST /devices/{id}/stop` and `/start`),
//! card by card. Every bound card is moved at the carrier once, on the path every stop and
//! start takes: under its card lock, on the card read fresh, gateway first and database after,
//! one audit row (`trigger = operator`), the same metrics, the queues aligned afterwards. The
//! caller sets the device's protect period first, so that no evaluation undoes the move while
//! the period lasts (the decision table does nothing then, and the protect handler keeps the
//! cards in line).
//!
//! The per-card rule is the protect handler's forced correction: a stop moves online cards
//! (`stop_reason = protect`), a start moves stopped cards except those an operator stopped one
//! by one (`manual`, invariant 5). A card already where it should be is left alone: no call.

use crate::decision::{self, Action, Decision, NothingWhy};
use crate::{StopResumeError, StopResumeService, Trigger};
use domain::{CardId, NetworkStatus, StopReason};
use serde::{Deserialize, Serialize};

/// What a device stop or start did to one card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceCardOutcome {
    /// The carrier stopped it; `network_status = 0, stop_reason = protect`.
    Stopped,
    /// The carrier started it; `network_status = 1, stop_reason = ''`.
    Started,
    /// Already where the device asked (or stopped by an operator, on a start): no call.
    Unchanged,
}

impl StopResumeService {
    /// Moves one card of a device to `to` (see the module doc).
    #[tracing::instrument(name = "device_switch", skip_all, fields(card_id = %card_id, to = ?to))]
    pub async fn switch_for_device(
        &self,
        card_id: CardId,
        to: NetworkStatus,
    ) -> Result<DeviceCardOutcome, StopResumeError> {
        self.locked(card_id, async {
            let s = self.load_for_act(card_id).await?;
            let action = match (to, s.card.facts.network_status, s.card.stop_reason) {
                (NetworkStatus::Stopped, NetworkStatus::Online, _) => Action::Stopped {
                    reason: StopReason::Protect,
                },
                (NetworkStatus::Online, NetworkStatus::Stopped, reason)
                    if reason != Some(StopReason::Manual) =>
                {
                    Action::Started
                }
                (NetworkStatus::Online, NetworkStatus::Stopped, _) => Action::Nothing {
                    why: NothingWhy::ManualStop,
                },
                (_, NetworkStatus::Stopped, _) => Action::Nothing {
                    why: NothingWhy::AlreadyStopped,
                },
                (_, NetworkStatus::Online, _) => Action::Nothing {
                    why: NothingWhy::AlreadyOnline,
                },
            };
            let decision = Decision {
                card_id,
                action,
                evidence: decision::evidence(&s.card, &s.packages, s.protect, self.clock.now()),
            };
            let evaluated = self.act(s.card, decision, Trigger::Operator).await?;
            Ok(match evaluated.decision.action {
                Action::Stopped { .. } => DeviceCardOutcome::Stopped,
                Action::Started => DeviceCardOutcome::Started,
                _ => DeviceCardOutcome::Unchanged,
            })
        })
        .await
    }
}
