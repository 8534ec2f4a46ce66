//! [`StopResumeService`]: read, decide and act on one card under its lock.

use crate::decision::{self, Action, Decision, NothingWhy, ProtectEvidence};
use crate::intent::Written;
use crate::settings::StopResumeSettings;
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
use tracing::{Instrument, warn};

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
    /// queues are aligned with the config it matches now (`docs/rules.md`, "Lifecycle").
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

    /// The one entry point of `docs/rules.md` ("Stop / resume"): under the card's lock, reads the
    /// card, its covering packages and its device's protect state, applies the decision table
    /// and carries it out. Returns what was done and why; on error the card is unchanged in the
    /// database and the caller reschedules it at the retry interval (or after a change lock or a
    /// back-off: [`StopResumeError::next_attempt_in`]).
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
    pub async fn stop_by_operator(&self, card_id: CardId) -> Result<Evaluated, StopResumeError> {
        self.operator(card_id, |card| {
            match (card.facts.network_status, card.stop_reason) {
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
    pub async fn start_by_operator(&self, card_id: CardId) -> Result<Evaluated, StopResumeError> {
        self.operator(card_id, |card| match card.facts.network_status {
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
    ) -> Result<Evaluated, StopResumeError> {
        self.locked(card_id, async {
            let s = self.load_for_act(card_id).await?;
            let evidence = decision::evidence(&s.card, &s.packages, s.protect, self.clock.now());
            let decision = Decision {
                card_id,
                action: choose(&s.card),
                evidence,
            };
            self.act(s.card, decision, Trigger::Operator).await
        })
        .await
    }

    pub(crate) async fn load(&self, card_id: CardId) -> Result<Snapshot, StopResumeError> {
        let card = self
            .cards
            .get(card_id)
            .await?
            .ok_or(StopResumeError::CardNotFound(card_id))?;
        let owner = PackageOwner::covering(card.id, card.facts.device_id);
        let protect = async {
            match card.facts.device_id {
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
        let span = crate::trace::decision_span(&card, &decision.action, trigger);
        Box::pin(self.act_inner(card, decision, trigger).instrument(span))
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
                        from_status: card.facts.network_status,
                        to_status: NetworkStatus::Stopped,
                        stop_reason: Some(to),
                        trigger: trigger.as_str().to_owned(),
                        gateway_outcome: GatewayOutcome::NotCalled,
                        trace_id: crate::trace::current_trace_id(),
                    },
                    card.stop_reason,
                )
                .await
                .map(|_| Written::AsDecided),
            Action::Nothing { .. } => Ok(Written::AsDecided),
        };
        let written = match done {
            Ok(written) => written,
            Err(e) => {
                metrics::record_failure();
                tracing::Span::current().record("outcome", "failed");
                return Err(e);
            }
        };
        if !matches!(decision.action, Action::Nothing { .. }) {
            // The `stop_start` span of `act` (a decision that does nothing has none).
            tracing::Span::current().record("outcome", "ok");
        }
        metrics::record(decision.action);
        metrics::log_decision(&decision, trigger);
        card = match written {
            // The row the carrier's yes was written to returned the card as it is now.
            Written::Card(fresh) => fresh,
            // The card was read under its lock and written as decided, in one transaction.
            Written::AsDecided => {
                decision.apply_to(&mut card);
                card
            }
            // A later word of the carrier overtook this one (the card lock was lost): the
            // database holds the later state, which is what the queues must follow.
            Written::Overtaken => self.read_again(card, &decision).await,
        };
        if !matches!(decision.action, Action::Nothing { .. })
            && let Some(lifecycle) = &self.lifecycle
        {
            // The one alignment of a change. A queue write that fails is repaired by the
            // card's next change or by the reconciliation: the change itself is made, so this
            // is logged, not returned.
            if let Err(e) = lifecycle.on_card_facts_changed(&card).await {
                warn!(card_id = %card.id, error = %e, "cannot align the card's queues with its new state");
            }
        }
        Ok(Evaluated { decision, card })
    }

    /// The card as the database holds it after a write that another overtook.
    async fn read_again(&self, mut card: Card, decision: &Decision) -> Card {
        match self.cards.get(card.id).await {
            Ok(Some(fresh)) => fresh,
            Ok(None) => card,
            Err(e) => {
                warn!(card_id = %card.id, error = %e, "cannot read the card again after an overtaken write");
                decision.apply_to(&mut card);
                card
            }
        }
    }
}
