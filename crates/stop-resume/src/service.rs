//! [`StopResumeService`]: read, decide and act on one card under its lock.

use crate::decision::{self, Action, Decision, NothingWhy, ProtectEvidence};
use crate::{StopResumeError, Trigger, metrics};
use domain::store::{CardStore, PackageStore, StateWrite};
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
    /// Longest a stop or start may wait for the carrier (the client's tries, back-offs and
    /// rate-limit waits included). A call still unanswered then is given up and its intent
    /// turned `interrupted` by its holder, so that no live call is ever older than this.
    /// The binaries set it from the gateway client's settings
    /// (`GatewayConfig::command_bound` plus a margin).
    pub call_deadline: Duration,
    /// What an intent may take beyond `call_deadline` (the database writes around the call).
    /// A `pending` row older than `call_deadline + intent_grace` by the database's clock has
    /// no live holder: the next evaluation of the card turns it `interrupted`.
    pub intent_grace: Duration,
}

impl StopResumeSettings {
    /// The defaults, with `call_deadline` 2 s above `command_bound`, the longest a stop or
    /// start can take by the gateway client's own timers (`GatewayConfig::command_bound`):
    /// the margin covers the scheduling of those timers, so a live call is not cut off.
    pub fn for_command_bound(command_bound: Duration) -> Self {
        Self {
            call_deadline: command_bound + Duration::from_secs(2),
            ..Self::default()
        }
    }

    /// Age after which a `pending` intent is known to have no live holder.
    pub fn intent_stale_after(&self) -> Duration {
        self.call_deadline + self.intent_grace
    }
}

impl Default for StopResumeSettings {
    fn default() -> Self {
        Self {
            lock_ttl: Duration::from_secs(30),
            lock_wait: Duration::from_secs(5),
            lock_retry: Duration::from_millis(25),
            // The client's defaults bound a command at 31 s (`GatewayConfig::command_bound`).
            call_deadline: Duration::from_secs(35),
            intent_grace: Duration::from_secs(15),
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

/// The future of [`StopResumeService::act`].
pub(crate) type BoxedAct<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Evaluated, StopResumeError>> + Send + 'a>,
>;

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
            let s = self.load_for_act(card_id).await?;
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
            let s = self.load_for_act(card_id).await?;
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

    /// [`load`](Self::load) for a decision that will be carried out: also settles the card's
    /// intents whose holder is gone (a `pending` row older than
    /// [`StopResumeSettings::intent_stale_after`] becomes `interrupted`: the call may or may
    /// not have reached the carrier, the card is as the database says, and the decision is
    /// taken again on that).
    pub(crate) fn load_for_act(
        &self,
        card_id: CardId,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Snapshot, StopResumeError>> + Send + '_>,
    > {
        // Type-erased, as `act`.
        Box::pin(self.load_for_act_inner(card_id))
    }

    async fn load_for_act_inner(&self, card_id: CardId) -> Result<Snapshot, StopResumeError> {
        let stale_after = self.settings.intent_stale_after();
        let (snapshot, settled) = tokio::join!(
            self.load(card_id),
            self.cards.interrupt_stale_intents(card_id, stale_after)
        );
        let interrupted = settled?;
        if interrupted > 0 {
            metrics::record_intent(GatewayOutcome::Interrupted, interrupted);
            warn!(card_id = %card_id, stale_after = ?stale_after,
                "a stop/start of the card was interrupted (its holder died before writing the \
                 carrier's answer; the carrier may or may not have applied it): deciding again \
                 on the database's facts");
        }
        snapshot
    }

    /// Carries out `decision` on `card`: the intent first, then the gateway, then the card
    /// after the carrier said yes (one audit row per stop or start, whatever its outcome);
    /// then the card's queues follow its new state.
    pub(crate) fn act(&self, card: Card, decision: Decision, trigger: Trigger) -> BoxedAct<'_> {
        // Type-erased: the intent, the call under its deadline and the close nest deep enough
        // to overflow the compiler's query depth in the handlers that await an evaluation.
        Box::pin(self.act_inner(card, decision, trigger))
    }

    async fn act_inner(
        &self,
        mut card: Card,
        decision: Decision,
        trigger: Trigger,
    ) -> Result<Evaluated, StopResumeError> {
        let done = match decision.action {
            Action::Stopped { reason } => {
                self.carry_out(&card, NetworkStatus::Stopped, Some(reason), trigger)
                    .await
            }
            Action::Started => {
                self.carry_out(&card, NetworkStatus::Online, None, trigger)
                    .await
            }
            Action::ReasonChanged { to, .. } => self
                .append(
                    &NewCardStateLog {
                        card_id: card.id,
                        from_status: card.network_status,
                        to_status: NetworkStatus::Stopped,
                        stop_reason: Some(to),
                        trigger: trigger.as_str().to_owned(),
                        gateway_outcome: GatewayOutcome::NotCalled,
                    },
                    card.stop_reason,
                )
                .await
                .map(|_| ()),
            Action::Nothing { .. } => Ok(()),
        };
        if let Err(e) = done {
            metrics::record_failure();
            return Err(e);
        }
        metrics::record(decision.action);
        metrics::log_decision(&decision, trigger);
        decision.apply_to(&mut card);
        if !matches!(decision.action, Action::Nothing { .. })
            && let Some(lifecycle) = &self.lifecycle
        {
            // Every change is aligned, a reason change too: stop reason is not a fact config
            // matching reads, but the card's other facts (real-name) may have changed since
            // the last alignment without one (a realname poll racing with this evaluation).
            // So the card is read again and its queues follow the database's facts. The
            // change is made; a read or queue write that fails is repaired by the next change
            // or by the reconciliation, so it is logged, not returned.
            card = match self.cards.get(card.id).await {
                Ok(Some(fresh)) => fresh,
                Ok(None) => card,
                Err(e) => {
                    warn!(card_id = %card.id, error = %e, "cannot read the card again to align its queues");
                    card
                }
            };
            if let Err(e) = lifecycle.on_card_facts_changed(&card).await {
                warn!(card_id = %card.id, error = %e, "cannot align the card's queues with its new state");
            }
        }
        Ok(Evaluated { decision, card })
    }

    /// One stop or start: the intent (`pending`, compare-and-set on the card's state as read),
    /// the carrier call within `call_deadline`, then the row `ok` with the card in one
    /// transaction, or `failed` (the card unchanged). Killed anywhere in between, the row
    /// stays `pending` until the next evaluation after the stale bound makes it `interrupted`.
    async fn carry_out(
        &self,
        card: &Card,
        to: NetworkStatus,
        stop_reason: Option<StopReason>,
        trigger: Trigger,
    ) -> Result<(), StopResumeError> {
        let entry = NewCardStateLog {
            card_id: card.id,
            from_status: card.network_status,
            to_status: to,
            stop_reason,
            trigger: trigger.as_str().to_owned(),
            gateway_outcome: GatewayOutcome::Pending,
        };
        let row = self.append(&entry, card.stop_reason).await?;
        let deadline = self.settings.call_deadline;
        let Ok(answer) = tokio::time::timeout(deadline, self.switch(card, to)).await else {
            // The call may have reached the carrier: the honest outcome is `interrupted`.
            self.close(card.id, row, GatewayOutcome::Interrupted).await;
            return Err(StopResumeError::CallCutOff {
                card_id: card.id,
                call: call_name(to),
                after: deadline,
            });
        };
        if let Err(e) = answer {
            self.close(card.id, row, GatewayOutcome::Failed).await;
            return Err(e);
        }
        match self.cards.close_intent(row, GatewayOutcome::Ok).await {
            Ok(closed) => {
                if !closed {
                    warn!(card_id = %card.id, row, "the intent was no longer pending when the carrier's yes was written");
                }
                metrics::record_intent(GatewayOutcome::Ok, 1);
                Ok(())
            }
            Err(e) => {
                // The row stays `pending`; once stale it becomes `interrupted` and the next
                // evaluation, on the database's (old) facts, asks the carrier again, which is
                // idempotent: the database catches up then.
                error!(card_id = %card.id, to = ?to, row, error = %e,
                    "carrier applied the change but the database write failed");
                Err(StopResumeError::from(e))
            }
        }
    }

    /// Appends a state-log row if the card is still as read; a card changed or a call in
    /// flight (which the Redis card lock should have kept out: the database is the last guard)
    /// answers `Busy`, and the caller decides again later.
    async fn append(
        &self,
        entry: &NewCardStateLog,
        from_reason: Option<StopReason>,
    ) -> Result<i64, StopResumeError> {
        match self.cards.append_state_if(entry, from_reason).await? {
            StateWrite::Written(row) => Ok(row),
            StateWrite::Gone => Err(StopResumeError::CardNotFound(entry.card_id)),
            StateWrite::Changed => {
                warn!(card_id = %entry.card_id, "the card changed between its read and its write (card lock lost?): deciding again later");
                Err(StopResumeError::Busy(entry.card_id))
            }
            StateWrite::InFlight => {
                warn!(card_id = %entry.card_id, "another stop/start of the card is in flight (card lock lost?): deciding again later");
                Err(StopResumeError::Busy(entry.card_id))
            }
        }
    }

    /// Writes a refusal or an interruption; a write that fails leaves the row `pending`, which
    /// the stale bound settles.
    async fn close(&self, card_id: CardId, row: i64, outcome: GatewayOutcome) {
        metrics::record_intent(outcome, 1);
        if let Err(e) = self.cards.close_intent(row, outcome).await {
            warn!(card_id = %card_id, row, outcome = %outcome, error = %e,
                "cannot write the intent's outcome; it stays pending until the stale bound");
        }
    }

    /// Asks the carrier to move the card to `to` (the client retries: 3 tries).
    async fn switch(&self, card: &Card, to: NetworkStatus) -> Result<(), StopResumeError> {
        let call = call_name(to);
        let answer = match to {
            NetworkStatus::Stopped => self.gateway.stop(card.carrier_id, &card.iccid).await,
            NetworkStatus::Online => self.gateway.start(card.carrier_id, &card.iccid).await,
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
}

fn call_name(to: NetworkStatus) -> &'static str {
    match to {
        NetworkStatus::Stopped => "stop",
        NetworkStatus::Online => "start",
    }
}
