//! [`StopResumeService`]: read, decide and act on one card under its lock.

use crate::decision::{self, Action, Decision, NothingWhy, ProtectEvidence};
use crate::{StopResumeError, Trigger, metrics};
use domain::store::{CardStore, PackageStore};
use domain::{
    Card, CardId, Clock, GatewayOutcome, NetworkStatus, NewCardStateLog, PackageOwner,
    PackageUsage, StopReason,
};
use gateway::CarrierGateway;
use lifecycle::PollingLifecycleService;
use polling_queue::{CardLock, ProtectKeys};
use std::sync::Arc;
use std::time::Duration;
use tracing::{error, warn};

/// Settings of the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopResumeSettings {
    /// TTL of `polling:lock:card:{id}`. The holder renews it every third of the TTL while it
    /// works, so it only bounds how long a lock outlives a holder that died.
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
            lock_ttl: Duration::from_secs(30),
            lock_wait: Duration::from_secs(5),
            lock_retry: Duration::from_millis(25),
        }
    }
}

/// Decides and acts for every caller. Cheap to clone (clones share everything).
#[derive(Clone)]
pub struct StopResumeService {
    pub(crate) cards: Arc<dyn CardStore>,
    pub(crate) packages: Arc<dyn PackageStore>,
    pub(crate) gateway: Arc<dyn CarrierGateway>,
    pub(crate) protect: ProtectKeys,
    pub(crate) lock: CardLock,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) settings: StopResumeSettings,
    /// Network status is a fact config matching reads: after every stop and start the card's
    /// queues are aligned with the config it matches now (RULES.md, "Lifecycle").
    lifecycle: Option<PollingLifecycleService>,
}

impl std::fmt::Debug for StopResumeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopResumeService")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// What a loaded card is decided from.
pub(crate) struct Snapshot {
    pub(crate) card: Card,
    pub(crate) packages: Vec<PackageUsage>,
    pub(crate) protect: ProtectEvidence,
}

/// A decision carried out, with the card as it is afterwards.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluated {
    pub decision: Decision,
    pub card: Card,
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
            lifecycle: None,
        }
    }

    /// Aligns the card's queues with its matched config after every stop and start made here
    /// (the worker and the API always set it; tests of the decision alone may not).
    pub fn with_lifecycle(mut self, lifecycle: PollingLifecycleService) -> Self {
        self.lifecycle = Some(lifecycle);
        self
    }

    /// The one entry point of `RULES.md` ("Stop / resume"): under the card's lock, reads the
    /// card, its covering packages and its device's protect state, applies the decision table
    /// and carries it out. Returns what was done and why; on error the card is unchanged in the
    /// database and the caller reschedules it at the retry interval.
    pub async fn evaluate_and_act(
        &self,
        card_id: CardId,
        trigger: Trigger,
    ) -> Result<Decision, StopResumeError> {
        Ok(self.evaluate(card_id, trigger).await?.decision)
    }

    /// [`evaluate_and_act`](Self::evaluate_and_act), also returning the card as it is after
    /// the decision (what a poll handler reschedules by).
    #[tracing::instrument(name = "evaluate_and_act", skip_all, fields(card_id = %card_id, trigger = %trigger))]
    pub async fn evaluate(
        &self,
        card_id: CardId,
        trigger: Trigger,
    ) -> Result<Evaluated, StopResumeError> {
        self.locked(card_id, async {
            let s = self.load(card_id).await?;
            let decision = decision::decide(&s.card, &s.packages, s.protect, self.clock.now());
            self.act(s.card, decision, trigger).await
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
            Ok(self
                .act(s.card, decision, Trigger::Operator)
                .await?
                .decision)
        })
        .await
    }

    pub(crate) async fn load(&self, card_id: CardId) -> Result<Snapshot, StopResumeError> {
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
    /// said yes, one audit row per change; then the card's queues follow its new state.
    pub(crate) async fn act(
        &self,
        mut card: Card,
        decision: Decision,
        trigger: Trigger,
    ) -> Result<Evaluated, StopResumeError> {
        let done = match decision.action {
            Action::Stopped { reason } => {
                self.switch(&card, NetworkStatus::Stopped).await?;
                self.record(
                    &card,
                    NetworkStatus::Stopped,
                    Some(reason),
                    trigger,
                    GatewayOutcome::Ok,
                )
                .await
            }
            Action::Started => {
                self.switch(&card, NetworkStatus::Online).await?;
                self.record(
                    &card,
                    NetworkStatus::Online,
                    None,
                    trigger,
                    GatewayOutcome::Ok,
                )
                .await
            }
            Action::ReasonChanged { to, .. } => {
                self.record(
                    &card,
                    NetworkStatus::Stopped,
                    Some(to),
                    trigger,
                    GatewayOutcome::NotCalled,
                )
                .await
            }
            Action::Nothing { .. } => Ok(()),
        };
        if let Err(e) = done {
            metrics::record_failure();
            return Err(e);
        }
        metrics::record(decision.action);
        metrics::log_decision(&decision, trigger);
        let switched = decision.apply_to(&mut card);
        if switched && let Some(lifecycle) = &self.lifecycle {
            // The change is made; a queue write that fails is repaired by the next change or
            // by the reconciliation, so it is logged, not returned.
            if let Err(e) = lifecycle.on_card_facts_changed(&card).await {
                warn!(card_id = %card.id, error = %e, "cannot align the card's queues with its new state");
            }
        }
        Ok(Evaluated { decision, card })
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
        Ok(())
    }
}
