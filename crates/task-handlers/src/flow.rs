//! The one poll flow every handler runs ([`PollingBase::run`]): slot, card, poll, reschedule.
//!
//! Whatever happens, the card leaves the flow rescheduled (invariant 3): at `now + matched
//! interval` after a poll, at `now + retry interval` after an error (a stop or start refused
//! under the carrier's change lock: after the lock's window; one backed off after refusals not
//! understood: after the back-off, `StopResumeError::next_attempt_in`), at `now` when the
//! cluster-wide pool of its type is full or the carrier budget had no slot for its query
//! (no request was made: the card only lost its turn, and the dispatch loop's budget gate
//! makes this rare). Only a card that should not be polled leaves its
//! queues: one that no longer exists, one whose own or device's polling switch is off
//! (invariant 1: a lifecycle or initializer write racing with a disable cannot keep it
//! polled), and one whose matched config no longer schedules this type (invariant 8: the card
//! is aligned with the config it matches now instead).

use crate::{HandlerError, Outcome, PollingBase, telemetry};
use chrono::{DateTime, Utc};
use domain::store::CardFacts;
use domain::{Card, CardId, CardIdentity, Megabytes, PackageUsage, TaskType};
use gateway::GatewayError;
use std::future::Future;
use std::time::{Duration, Instant};
use stop_resume::{UsageReading, decisive_poll};
use tracing::{debug, warn};

/// When a card whose carrier cannot answer its task type (`GatewayError::Unsupported`) comes
/// back to ask again.
pub(crate) const UNSUPPORTED_RECHECK: Duration = Duration::from_secs(3600);

/// What a handler's poll of one card came to: the card as it is after the poll's writes, read
/// back from the store (a changed real-name or network status may match another config, hence
/// another interval or other queues).
#[derive(Debug, Clone)]
pub struct Polled {
    pub card: Card,
    pub outcome: Outcome,
    /// The card's packages as the poll read them (the usage poll: whether its next one is
    /// decisive depends on them, see `stop_resume::decisive_poll`); `None`: not read.
    pub packages: Option<Vec<PackageUsage>>,
    /// Megabytes the poll counted (the usage poll's delta; 0 otherwise).
    pub counted_mb: Megabytes,
}

impl Polled {
    pub fn success(card: Card) -> Self {
        Self {
            card,
            outcome: Outcome::Success,
            packages: None,
            counted_mb: Megabytes::ZERO,
        }
    }

    /// Deliberately not polled (e.g. a standalone card in the protect poll); still rescheduled
    /// at its interval.
    pub fn skipped(card: Card) -> Self {
        Self {
            card,
            outcome: Outcome::Skipped,
            packages: None,
            counted_mb: Megabytes::ZERO,
        }
    }

    /// With what the usage poll read: the card's packages after its deduction, and the
    /// megabytes it counted.
    pub fn with_usage(self, packages: Vec<PackageUsage>, counted_mb: Megabytes) -> Self {
        Self {
            packages: Some(packages),
            counted_mb,
            ..self
        }
    }
}

/// Where a poll ended, before rescheduling. One value per poll, returned and matched at once:
/// a box would add an allocation per poll to save a few bytes of stack.
#[expect(clippy::large_enum_variant, reason = "one short-lived value per poll")]
enum Ended {
    /// Polled (or deliberately skipped) with this result.
    Polled(Polled),
    /// The card is gone (deleted, or never existed).
    Gone,
    /// The card's or its device's polling switch is off.
    Disabled,
}

/// What a poll starts from: the card's identity (the usage poll, through the card cache) or its
/// facts as the store holds them (the real-name, package and protect polls).
pub(crate) trait Start {
    /// The card's and its device's polling switches are both on.
    fn polling_enabled(&self) -> bool;
}

impl Start for CardIdentity {
    fn polling_enabled(&self) -> bool {
        self.polling_enabled
    }
}

impl Start for CardFacts {
    fn polling_enabled(&self) -> bool {
        CardFacts::polling_enabled(self)
    }
}

/// The protect check's start: the facts, and the periods it reads.
impl<T> Start for (CardFacts, T) {
    fn polling_enabled(&self) -> bool {
        self.0.polling_enabled()
    }
}

async fn load_and_poll<S, L, F, Fut>(load: L, poll: F) -> Result<Ended, HandlerError>
where
    S: Start,
    L: Future<Output = Result<Option<S>, HandlerError>>,
    F: FnOnce(S) -> Fut,
    Fut: Future<Output = Result<Option<Polled>, HandlerError>>,
{
    let Some(start) = load.await? else {
        return Ok(Ended::Gone);
    };
    if !start.polling_enabled() {
        return Ok(Ended::Disabled);
    }
    Ok(poll(start).await?.map_or(Ended::Gone, Ended::Polled))
}

impl PollingBase {
    /// Runs one poll of `card_id` for `task`: takes the type's slot (pool full: rescheduled for
    /// now, [`Outcome::RequeuedFull`]), reads what the poll starts from (`load`: the card's
    /// identity through the cache, or its facts from the store), runs `poll`, gives the slot
    /// back, reschedules, and records counters and metrics. `load` and `poll` answer `None` when
    /// the card does not exist (any more).
    pub(crate) async fn run<S, L, F, Fut>(
        &self,
        task: TaskType,
        card_id: CardId,
        load: L,
        poll: F,
    ) -> Outcome
    where
        S: Start,
        L: Future<Output = Result<Option<S>, HandlerError>> + Send,
        F: FnOnce(S) -> Fut + Send,
        Fut: Future<Output = Result<Option<Polled>, HandlerError>> + Send,
    {
        let started = Instant::now();
        let outcome = match self.acquire_concurrency(task).await {
            Ok(Some(permit)) => {
                let result = load_and_poll(load, poll).await;
                self.release_concurrency(permit).await;
                self.finish(task, card_id, result).await
            }
            Ok(None) => self.pool_full(task, card_id).await,
            Err(e) => self.finish(task, card_id, Err(e)).await,
        };
        telemetry::record_run(&self.counters, task, outcome, started.elapsed()).await;
        outcome
    }

    /// `docs/rules.md`, "Polls", step 1: the dequeued card is rescheduled for now before the
    /// handler returns, or it would only come back when its lease ends.
    async fn pool_full(&self, task: TaskType, card_id: CardId) -> Outcome {
        match self.requeue_card(card_id, task, Duration::ZERO).await {
            Ok(()) => debug!(card_id = %card_id, task = %task,
                "并发数已满，已重新入队 (concurrency pool full, card requeued for now)"),
            Err(error) => warn!(card_id = %card_id, task = %task, %error,
                "concurrency pool full and the requeue failed; the card's lease brings it back"),
        }
        Outcome::RequeuedFull
    }

    async fn finish(
        &self,
        task: TaskType,
        card_id: CardId,
        result: Result<Ended, HandlerError>,
    ) -> Outcome {
        // A stop or start the carrier refused under its change lock, or backed off after
        // refusals not understood: the card comes back when that ends, not at the retry interval.
        let next_attempt = match &result {
            Err(HandlerError::StopResume(e)) => e.next_attempt_in(),
            _ => None,
        };
        let (delay, outcome, decisive) = match result {
            Ok(Ended::Polled(Polled {
                card,
                outcome,
                packages,
                counted_mb,
            })) => match self.matched_interval(&card, task) {
                Some(interval) => {
                    let usage = UsageReading {
                        packages: packages.as_deref(),
                        counted_mb,
                    };
                    let decisive = decisive_poll(task, &card, usage, self.now());
                    (interval, outcome, decisive)
                }
                None => {
                    self.align(&card, task).await;
                    return outcome;
                }
            },
            Ok(Ended::Gone) => {
                // Deleted (the lifecycle normally removed it already): make sure no queue keeps
                // bringing it back. Idempotent.
                debug!(card_id = %card_id, task = %task, "card not found; removed from every queue");
                if let Err(error) = self.queue.on_card_deleted(card_id).await {
                    warn!(card_id = %card_id, %error, "cannot remove a missing card from the queues");
                }
                return Outcome::Skipped;
            }
            Ok(Ended::Disabled) => {
                debug!(card_id = %card_id, task = %task,
                    "polling is disabled for the card or its device; removed from every queue");
                if let Err(error) = self.lifecycle.on_card_disabled(card_id).await {
                    warn!(card_id = %card_id, %error, "cannot remove a disabled card from the queues");
                }
                return Outcome::Skipped;
            }
            Err(HandlerError::Gateway(GatewayError::Unsupported(call))) => {
                // The carrier's platform has no such call (Control Center keeps no real-name
                // status): nothing is known, nothing is written, and asking again at the retry
                // interval would only spin. The card comes back after a long pause, in case the
                // carrier's configuration changes.
                debug!(card_id = %card_id, task = %task, call,
                    "the carrier's protocol cannot answer this task type; rechecked later");
                (UNSUPPORTED_RECHECK, Outcome::Skipped, false)
            }
            Err(HandlerError::Gateway(GatewayError::RateLimited)) => {
                debug!(card_id = %card_id, task = %task,
                    "no gateway budget slot within the wait bound; card requeued for now");
                (Duration::ZERO, Outcome::RequeuedFull, false)
            }
            Err(error) if next_attempt.is_some() => {
                let delay = next_attempt.unwrap_or(self.settings.retry_interval);
                debug!(card_id = %card_id, task = %task, %error, delay_secs = delay.as_secs(),
                    "the carrier refused the change for a while; card rescheduled after it");
                (delay, Outcome::Failure, false)
            }
            Err(error) => {
                // Gateway query failures are logged by the handler with its own wording.
                if !matches!(error, HandlerError::Gateway(_)) {
                    warn!(card_id = %card_id, task = %task, %error,
                        "轮询失败，按重试间隔重新入队 (poll failed; rescheduled at the retry interval)");
                }
                (self.settings.retry_interval, Outcome::Failure, false)
            }
        };
        if let Err(error) = self.requeue(card_id, task, delay, decisive).await {
            warn!(card_id = %card_id, task = %task, %error,
                "cannot reschedule the card; its lease brings it back");
        }
        outcome
    }

    /// Reschedules the card at `now + delay` (`ZADD XX`: a card removed meanwhile by the
    /// lifecycle stays removed).
    pub async fn requeue_card(
        &self,
        card_id: CardId,
        task: TaskType,
        delay: Duration,
    ) -> Result<(), HandlerError> {
        self.requeue(card_id, task, delay, false).await
    }

    /// [`requeue_card`](Self::requeue_card); with `decisive` (the card's next poll of `task`
    /// may stop or resume it, `stop_resume::decisive_poll`) also picked in the type's decisive
    /// lane, so a backlog under a carrier quota does not hold it back.
    async fn requeue(
        &self,
        card_id: CardId,
        task: TaskType,
        delay: Duration,
        decisive: bool,
    ) -> Result<(), HandlerError> {
        let at = self.after(delay);
        if decisive {
            self.queue.reschedule_decisive(card_id, task, at).await?;
        } else {
            self.queue.reschedule(card_id, task, at).await?;
        }
        debug!(card_id = %card_id, task = %task, delay_secs = delay.as_secs(), decisive,
            "card rescheduled");
        Ok(())
    }

    /// `now + delay` (`now` when that overflows).
    fn after(&self, delay: Duration) -> DateTime<Utc> {
        let now = self.now();
        chrono::Duration::from_std(delay)
            .ok()
            .and_then(|d| now.checked_add_signed(d))
            .unwrap_or(now)
    }

    /// The card's matched config no longer schedules `task` (its facts or the configs changed):
    /// its queues follow the config it matches now. If that fails the card is parked at the
    /// retry interval, to be aligned again then.
    async fn align(&self, card: &Card, task: TaskType) {
        match self.lifecycle.on_card_facts_changed(card).await {
            Ok(aligned) => debug!(card_id = %card.id, task = %task, added = aligned.added,
                removed = aligned.removed,
                "no matched config schedules this task type any more; queues aligned"),
            Err(error) => {
                warn!(card_id = %card.id, task = %task, %error, "cannot align the card's queues; parked");
                if let Err(error) = self
                    .requeue_card(card.id, task, self.settings.retry_interval)
                    .await
                {
                    warn!(card_id = %card.id, %error, "cannot park the card; its lease brings it back");
                }
            }
        }
    }
}
