//! [`DeviceSwitch`]: an operator's stop or start of a whole device (`POST /devices/{id}/stop`
//! and `/start`). Every bound card is moved at the carrier once, under its card lock, with
//! `stop_reason = protect` on a stop; the caller sets the device's protect period first, so
//! that no evaluation undoes the move while the period lasts (the decision table does nothing
//! then, and the protect handler keeps the cards in line).
//!
//! The per-card rule is the protect handler's forced correction: a stop moves online cards,
//! a start moves stopped cards except those an operator stopped one by one (`manual`,
//! invariant 5). A card already where it should be is left alone: no gateway call.

use crate::{StopResumeError, Trigger};
use domain::store::CardStore;
use domain::{CardId, GatewayOutcome, NetworkStatus, NewCardStateLog, StopReason};
use gateway::CarrierGateway;
use polling_queue::{CardCache, CardLock};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

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

/// Moves the cards of a device at the carrier. Cheap to clone.
#[derive(Clone)]
pub struct DeviceSwitch {
    cards: Arc<dyn CardStore>,
    gateway: Arc<dyn CarrierGateway>,
    lock: CardLock,
    cache: Option<CardCache>,
    lock_ttl: Duration,
    lock_wait: Duration,
}

impl std::fmt::Debug for DeviceSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSwitch").finish_non_exhaustive()
    }
}

impl DeviceSwitch {
    pub fn new(
        cards: Arc<dyn CardStore>,
        gateway: Arc<dyn CarrierGateway>,
        lock: CardLock,
        cache: Option<CardCache>,
        lock_ttl: Duration,
    ) -> Self {
        Self {
            cards,
            gateway,
            lock,
            cache,
            lock_ttl,
            lock_wait: Duration::from_secs(5),
        }
    }

    /// Moves one card of a device to `to` (see the module doc), under the card's lock.
    #[tracing::instrument(name = "device_switch", skip_all, fields(card_id = %card_id, to = ?to))]
    pub async fn switch_card(
        &self,
        card_id: CardId,
        to: NetworkStatus,
    ) -> Result<DeviceCardOutcome, StopResumeError> {
        let token = self.acquire(card_id).await?;
        let out = self.switch_locked(card_id, to).await;
        if let Err(e) = self.lock.unlock(card_id, token).await {
            warn!(card_id = %card_id, error = %e, "could not release the card lock; it expires with its TTL");
        }
        out
    }

    async fn switch_locked(
        &self,
        card_id: CardId,
        to: NetworkStatus,
    ) -> Result<DeviceCardOutcome, StopResumeError> {
        let card = self
            .cards
            .get(card_id)
            .await?
            .ok_or(StopResumeError::CardNotFound(card_id))?;
        let moves = match to {
            NetworkStatus::Stopped => card.network_status == NetworkStatus::Online,
            NetworkStatus::Online => {
                card.network_status == NetworkStatus::Stopped
                    && card.stop_reason != Some(StopReason::Manual)
            }
        };
        if !moves {
            return Ok(DeviceCardOutcome::Unchanged);
        }
        let (call, answer) = match to {
            NetworkStatus::Stopped => ("stop", self.gateway.stop(&card.iccid).await),
            NetworkStatus::Online => ("start", self.gateway.start(&card.iccid).await),
        };
        match answer {
            Ok(got) if got == to => {}
            Ok(got) => {
                return Err(StopResumeError::UnexpectedStatus { card_id, call, got });
            }
            Err(source) => {
                warn!(card_id = %card_id, call, error = %source, "gateway refused; card left unchanged");
                return Err(StopResumeError::Gateway {
                    card_id,
                    call,
                    source,
                });
            }
        }
        let stop_reason = (to == NetworkStatus::Stopped).then_some(StopReason::Protect);
        self.cards
            .record_state_change(&NewCardStateLog {
                card_id,
                from_status: card.network_status,
                to_status: to,
                stop_reason,
                trigger: Trigger::Operator.as_str().to_owned(),
                gateway_outcome: GatewayOutcome::Ok,
            })
            .await?;
        if let Some(cache) = &self.cache
            && let Err(e) = cache.invalidate(card_id).await
        {
            warn!(card_id = %card_id, error = %e, "cannot drop the card's cached snapshot; it expires with its TTL");
        }
        info!(card_id = %card_id, call, "device switch: card moved at the carrier");
        Ok(match to {
            NetworkStatus::Stopped => DeviceCardOutcome::Stopped,
            NetworkStatus::Online => DeviceCardOutcome::Started,
        })
    }

    async fn acquire(
        &self,
        card_id: CardId,
    ) -> Result<polling_queue::CardLockToken, StopResumeError> {
        let deadline = tokio::time::Instant::now() + self.lock_wait;
        loop {
            if let Some(token) = self.lock.try_lock(card_id, self.lock_ttl).await? {
                return Ok(token);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(StopResumeError::Busy(card_id));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}
