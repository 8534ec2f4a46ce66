//! [`StopResumeService`]: read, decide and act on one card under its lock.

use crate::decision::{self, Action, Decision, NothingWhy, ProtectEvidence};
use crate::{StopResumeError, Trigger, metrics};
use domain::store::{CardStore, PackageStore};
use domain::{
    Card, CardId, Clock, DeductionStep, GatewayOutcome, Megabytes, NetworkStatus, NewCardStateLog,
    PackageOwner, PackageUsage, StopReason,
};
use gateway::CarrierGateway;
use polling_queue::{CardCache, CardLock, CardLockToken, ProtectKeys};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, error, warn};

/// Settings of the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopResumeSettings {
    /// TTL of `polling:lock:card:{id}`. Must exceed the longest read-decide-act: a gateway call
    /// with its three tries (3 x `CMP_GATEWAY_TIMEOUT_MS` plus back-off, about 17 s with the
    /// defaults). If it ran out mid-way a second evaluation could call the gateway too.
    pub lock_ttl: Duration,
    /// How long an evaluation waits for a lock held by someone else before answering
    /// [`StopResumeError::Busy`]. Waiting (rather than failing at once) lets the second caller
    /// decide on the state the first one left, which is nearly always "nothing"; the bound keeps
    /// a handler slot from being held hostage by a slow carrier.
    pub lock_wait: Duration,
    /// Pause between two attempts to take a held lock.
    pub lock_retry: Duration,
}

impl Default for StopResumeSettings {
    fn default() -> Self {
        Self {
            lock_ttl: Duration::from_secs(60),
            lock_wait: Duration::from_secs(5),
            lock_retry: Duration::from_millis(25),
        }
    }
}

/// Decides and acts for every caller. Cheap to clone (clones share everything).
#[derive(Clone)]
pub struct StopResumeService {
    cards: Arc<dyn CardStore>,
    packages: Arc<dyn PackageStore>,
    gateway: Arc<dyn CarrierGateway>,
    protect: ProtectKeys,
    lock: CardLock,
    clock: Arc<dyn Clock>,
    settings: StopResumeSettings,
    /// The poll handlers' card snapshots: dropped after every state change, so that no handler
    /// goes on working from the state before it.
    cache: Option<CardCache>,
}

impl std::fmt::Debug for StopResumeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopResumeService")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// What a loaded card is decided from.
struct Snapshot {
    card: Card,
    packages: Vec<PackageUsage>,
    protect: ProtectEvidence,
}

impl StopResumeService {
    pub fn new(
        cards: Arc<dyn CardStore>,
        packages: Arc<dyn PackageStore>,
        gateway: Arc<dyn CarrierGateway>,
        protect: ProtectKeys,
        lock: CardLock,
        clock: Arc<dyn Clock>,
        settings: StopResumeSettings,
    ) -> Self {
        Self {
            cards,
            packages,
            gateway,
            protect,
            lock,
            clock,
            settings,
            cache: None,
        }
    }

    /// Drops the card's cached snapshot (`polling:card:{id}`) after every stop, start and
    /// reason change made here.
    pub fn with_card_cache(mut self, cache: CardCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The one entry point of `RULES.md` ("Stop / resume"): under the card's lock, reads the
    /// card, its covering packages and its device's protect state, applies the decision table
    /// and carries it out. Returns what was done and why; on error the card is unchanged in the
    /// database and the caller reschedules it at the retry interval.
    #[tracing::instrument(name = "evaluate_and_act", skip_all, fields(card_id = %card_id, trigger = %trigger))]
    pub async fn evaluate_and_act(
        &self,
        card_id: CardId,
        trigger: Trigger,
    ) -> Result<Decision, StopResumeError> {
        self.locked(card_id, async {
            let s = self.load(card_id).await?;
            let decision = decision::decide(&s.card, &s.packages, s.protect, self.clock.now());
            self.act(&s.card, decision, trigger).await
        })
        .await
    }

    /// The decision `evaluate_and_act` would take now, without the lock and without acting:
    /// for the API's "why is this card stopped?".
    pub async fn preview(&self, card_id: CardId) -> Result<Decision, StopResumeError> {
        let s = self.load(card_id).await?;
        Ok(decision::decide(
            &s.card,
            &s.packages,
            s.protect,
            self.clock.now(),
        ))
    }

    /// An operator's stop: gateway stop if the card is online, then `stop_reason = manual`
    /// (a stopped card only has its reason rewritten). Automation never lifts it.
    #[tracing::instrument(name = "stop_by_operator", skip_all, fields(card_id = %card_id))]
    pub async fn stop_by_operator(&self, card_id: CardId) -> Result<Decision, StopResumeError> {
        self.operator(card_id, |card| {
            match (card.network_status, card.stop_reason) {
                (NetworkStatus::Online, _) => Action::Stopped {
                    reason: StopReason::Manual,
                },
                (NetworkStatus::Stopped, Some(StopReason::Manual)) => Action::Nothing {
                    why: NothingWhy::AlreadyStopped,
                },
                (NetworkStatus::Stopped, from) => Action::ReasonChanged {
                    from,
                    to: StopReason::Manual,
                },
            }
        })
        .await
    }

    /// An operator's start: gateway start of a stopped card, whatever its reason (an operator
    /// may lift `manual`), then `stop_reason = ''`. Automation may stop it again at its next
    /// evaluation if a reason holds.
    #[tracing::instrument(name = "start_by_operator", skip_all, fields(card_id = %card_id))]
    pub async fn start_by_operator(&self, card_id: CardId) -> Result<Decision, StopResumeError> {
        self.operator(card_id, |card| match card.network_status {
            NetworkStatus::Stopped => Action::Started,
            NetworkStatus::Online => Action::Nothing {
                why: NothingWhy::AlreadyOnline,
            },
        })
        .await
    }

    /// Deducts `delta_real_mb` real megabytes from the valid packages covering the card (its
    /// device's when bound), in one transaction of the store (`RULES.md`, "Deducting usage").
    pub async fn deduct_data_usage(
        &self,
        card_id: CardId,
        delta_real_mb: Megabytes,
    ) -> Result<Vec<DeductionStep>, StopResumeError> {
        let card = self
            .cards
            .get(card_id)
            .await?
            .ok_or(StopResumeError::CardNotFound(card_id))?;
        let owner = PackageOwner::covering(card.id, card.device_id);
        let steps = self
            .packages
            .deduct_data_usage(owner, delta_real_mb, self.clock.now())
            .await?;
        debug!(card_id = %card_id, delta_mb = %delta_real_mb, steps = steps.len(), "usage deducted");
        Ok(steps)
    }

    async fn operator(
        &self,
        card_id: CardId,
        choose: impl FnOnce(&Card) -> Action + Send,
    ) -> Result<Decision, StopResumeError> {
        self.locked(card_id, async {
            let s = self.load(card_id).await?;
            let evidence = decision::evidence(&s.card, &s.packages, s.protect, self.clock.now());
            let decision = Decision {
                card_id,
                action: choose(&s.card),
                evidence,
            };
            self.act(&s.card, decision, Trigger::Operator).await
        })
        .await
    }

    async fn load(&self, card_id: CardId) -> Result<Snapshot, StopResumeError> {
        let card = self
            .cards
            .get(card_id)
            .await?
            .ok_or(StopResumeError::CardNotFound(card_id))?;
        let owner = PackageOwner::covering(card.id, card.device_id);
        let protect = async {
            match card.device_id {
                Some(device) => self
                    .protect
                    .protect_state(device)
                    .await
                    .map(ProtectEvidence::from),
                None => Ok(ProtectEvidence::default()),
            }
        };
        let (packages, protect) = tokio::join!(self.packages.usages_of(owner), protect);
        Ok(Snapshot {
            packages: packages?,
            protect: protect?,
            card,
        })
    }

    /// Carries out `decision` on `card`: the gateway first, the database only after the carrier
    /// said yes, one audit row per change.
    async fn act(
        &self,
        card: &Card,
        decision: Decision,
        trigger: Trigger,
    ) -> Result<Decision, StopResumeError> {
        let done = match decision.action {
            Action::Stopped { reason } => {
                self.switch(card, NetworkStatus::Stopped).await?;
                self.record(
                    card,
                    NetworkStatus::Stopped,
                    Some(reason),
                    trigger,
                    GatewayOutcome::Ok,
                )
                .await
            }
            Action::Started => {
                self.switch(card, NetworkStatus::Online).await?;
                self.record(
                    card,
                    NetworkStatus::Online,
                    None,
                    trigger,
                    GatewayOutcome::Ok,
                )
                .await
            }
            Action::ReasonChanged { to, .. } => {
                self.record(
                    card,
                    NetworkStatus::Stopped,
                    Some(to),
                    trigger,
                    GatewayOutcome::NotCalled,
                )
                .await
            }
            Action::Nothing { .. } => Ok(()),
        };
        match done {
            Ok(()) => {
                metrics::record(decision.action);
                metrics::log_decision(&decision, trigger);
                Ok(decision)
            }
            Err(e) => {
                metrics::record_failure();
                Err(e)
            }
        }
    }

    /// Asks the carrier to move the card to `to` (the client retries: 3 tries).
    async fn switch(&self, card: &Card, to: NetworkStatus) -> Result<(), StopResumeError> {
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
        let outcome = match answer {
            Ok(got) if got == to => Ok(()),
            Ok(got) => Err(StopResumeError::UnexpectedStatus {
                card_id: card.id,
                call,
                got,
            }),
            Err(source) => Err(StopResumeError::Gateway {
                card_id: card.id,
                call,
                source,
            }),
        };
        if let Err(e) = &outcome {
            warn!(card_id = %card.id, call, error = %e, cause = ?std::error::Error::source(e),
                "gateway refused; card left unchanged");
        }
        outcome
    }

    async fn record(
        &self,
        card: &Card,
        to_status: NetworkStatus,
        stop_reason: Option<StopReason>,
        trigger: Trigger,
        gateway_outcome: GatewayOutcome,
    ) -> Result<(), StopResumeError> {
        let entry = NewCardStateLog {
            card_id: card.id,
            from_status: card.network_status,
            to_status,
            stop_reason,
            trigger: trigger.as_str().to_owned(),
            gateway_outcome,
        };
        self.cards.record_state_change(&entry).await.map_err(|e| {
            if gateway_outcome == GatewayOutcome::Ok {
                // The next evaluation sees the old state and asks the carrier again, which is
                // idempotent: the database catches up then.
                error!(card_id = %card.id, to = ?to_status, error = %e,
                    "carrier applied the change but the database write failed");
            }
            StopResumeError::from(e)
        })?;
        if let Some(cache) = &self.cache
            && let Err(e) = cache.invalidate(card.id).await
        {
            warn!(card_id = %card.id, error = %e, "cannot drop the card's cached snapshot; it expires with its TTL");
        }
        Ok(())
    }

    /// Runs `work` holding the card's lock; releases it by compare-and-delete. If `work` is
    /// cancelled the lock simply expires with its TTL.
    async fn locked<T>(
        &self,
        card_id: CardId,
        work: impl Future<Output = Result<T, StopResumeError>>,
    ) -> Result<T, StopResumeError> {
        let token = self.acquire(card_id).await?;
        let out = work.await;
        self.release(card_id, token).await;
        out
    }

    async fn acquire(&self, card_id: CardId) -> Result<CardLockToken, StopResumeError> {
        let deadline = tokio::time::Instant::now() + self.settings.lock_wait;
        loop {
            if let Some(token) = self.lock.try_lock(card_id, self.settings.lock_ttl).await? {
                return Ok(token);
            }
            if tokio::time::Instant::now() >= deadline {
                debug!(card_id = %card_id, "card lock still held elsewhere; giving up");
                return Err(StopResumeError::Busy(card_id));
            }
            tokio::time::sleep(self.settings.lock_retry).await;
        }
    }

    async fn release(&self, card_id: CardId, token: CardLockToken) {
        match self.lock.unlock(card_id, token).await {
            Ok(true) => {}
            Ok(false) => warn!(card_id = %card_id, ttl = ?self.settings.lock_ttl,
                "card lock expired before the evaluation finished; raise the lock TTL"),
            Err(e) => warn!(card_id = %card_id, error = %e,
                "could not release the card lock; it expires with its TTL"),
        }
    }
}
