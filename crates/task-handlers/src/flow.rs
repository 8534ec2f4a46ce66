//! The one poll flow every handler runs ([`PollingBase::run`]): slot, card, poll, reschedule.
//!
//! Whatever happens, the card leaves the flow rescheduled (invariant 3): at `now` when the
//! pool is full, at `now + matched interval` after a poll, at `now + retry interval` after an
//! error. Only a card that no longer exists is left out, and it is removed from every queue.

use crate::{HandlerError, Outcome, PollingBase, telemetry};
use domain::{Card, CardId, NetworkStatus, TaskType};
use std::future::Future;
use std::time::{Duration, Instant};
use stop_resume::{Action, Decision};
use tracing::{debug, warn};

/// What a handler's poll of one card came to: the card as it is after the poll's writes (a
/// changed real-name or network status may match another config, hence another interval).
#[derive(Debug, Clone)]
pub struct Polled {
    pub card: Card,
    pub outcome: Outcome,
}

impl Polled {
    pub fn success(card: Card) -> Self {
        Self {
            card,
            outcome: Outcome::Success,
        }
    }

    /// Deliberately not polled (e.g. a standalone card in the protect poll); still rescheduled
    /// at its interval.
    pub fn skipped(card: Card) -> Self {
        Self {
            card,
            outcome: Outcome::Skipped,
        }
    }
}

/// Brings the snapshot in line with what `evaluate_and_act` did; `true` if it changed.
pub(crate) fn apply_decision(card: &mut Card, decision: &Decision) -> bool {
    match decision.action {
        Action::Stopped { reason } | Action::ReasonChanged { to: reason, .. } => {
            card.network_status = NetworkStatus::Stopped;
            card.stop_reason = Some(reason);
        }
        Action::Started => {
            card.network_status = NetworkStatus::Online;
            card.stop_reason = None;
        }
        Action::Nothing { .. } => return false,
    }
    true
}

impl PollingBase {
    /// Runs one poll of `card_id` for `task`: takes the type's slot (pool full: rescheduled for
    /// now, [`Outcome::RequeuedFull`]), reads the card through the cache, runs `poll`, gives
    /// the slot back, reschedules, and records counters and metrics.
    ///
    /// A card whose matched config no longer schedules `task` (a config changed, or the card's
    /// state now matches another config) is not polled and is parked at the retry interval
    /// rather than dropped: the config or the card's state may change back without any
    /// lifecycle event (real-name and network status change through polling itself), and a
    /// dropped card would never come back.
    pub(crate) async fn run<F, Fut>(&self, task: TaskType, card_id: CardId, poll: F) -> Outcome
    where
        F: FnOnce(Card) -> Fut + Send,
        Fut: Future<Output = Result<Polled, HandlerError>> + Send,
    {
        let started = Instant::now();
        let outcome = match self.acquire_concurrency(task).await {
            Ok(Some(permit)) => {
                let result = self.load_and_poll(task, card_id, poll).await;
                self.release_concurrency(permit).await;
                self.finish(task, card_id, result).await
            }
            Ok(None) => self.pool_full(task, card_id).await,
            Err(e) => self.finish(task, card_id, Err(e)).await,
        };
        telemetry::record_run(&self.counters, task, outcome, started.elapsed()).await;
        outcome
    }

    async fn load_and_poll<F, Fut>(
        &self,
        task: TaskType,
        card_id: CardId,
        poll: F,
    ) -> Result<Option<Polled>, HandlerError>
    where
        F: FnOnce(Card) -> Fut,
        Fut: Future<Output = Result<Polled, HandlerError>>,
    {
        let Some(card) = self.get_card_with_cache(card_id).await? else {
            return Ok(None);
        };
        if self.matched_interval(&card, task).is_none() {
            debug!(card_id = %card_id, task = %task,
                "no matched config schedules this task type; parked at the retry interval");
            return Ok(Some(Polled::skipped(card)));
        }
        poll(card).await.map(Some)
    }

    /// The seed's correctness constraint: the dequeued card is rescheduled for now before the
    /// handler returns, or it would only come back when its lease ends.
    async fn pool_full(&self, task: TaskType, card_id: CardId) -> Outcome {
        match self.requeue_card(card_id, task, Duration::ZERO).await {
            Ok(()) => debug!(card_id = %card_id, task = %task,
                "并发数已满，已重新入队: cardID={card_id} (concurrency pool full, card requeued for now)"),
            Err(error) => warn!(card_id = %card_id, task = %task, %error,
                "concurrency pool full and the requeue failed; the card's lease brings it back"),
        }
        Outcome::RequeuedFull
    }

    async fn finish(
        &self,
        task: TaskType,
        card_id: CardId,
        result: Result<Option<Polled>, HandlerError>,
    ) -> Outcome {
        let (delay, outcome) = match result {
            Ok(Some(Polled { card, outcome })) => {
                let interval = self.matched_interval(&card, task);
                (interval.unwrap_or(self.settings.retry_interval), outcome)
            }
            Ok(None) => {
                // Deleted (the lifecycle normally removed it already): make sure no queue keeps
                // bringing it back. Idempotent.
                debug!(card_id = %card_id, task = %task, "card not found; removed from every queue");
                if let Err(error) = self.queue.on_card_deleted(card_id).await {
                    warn!(card_id = %card_id, %error, "cannot remove a missing card from the queues");
                }
                return Outcome::Skipped;
            }
            Err(error) => {
                // Gateway query failures are logged by the handler with its own wording.
                if !matches!(error, HandlerError::Gateway(_)) {
                    warn!(card_id = %card_id, task = %task, %error,
                        "轮询失败，按重试间隔重新入队: cardID={card_id}, error={error} (poll failed; rescheduled at the retry interval)");
                }
                (self.settings.retry_interval, Outcome::Failure)
            }
        };
        if let Err(error) = self.requeue_card(card_id, task, delay).await {
            warn!(card_id = %card_id, task = %task, %error,
                "cannot reschedule the card; its lease brings it back");
        }
        outcome
    }
}
