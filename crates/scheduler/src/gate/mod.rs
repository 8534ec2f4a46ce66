//! The cluster-wide concurrency limit, seen from the dispatch loop.
//!
//! A handler that finds its type's cluster-wide pool (`polling:concurrency:{type}`) full puts
//! its card back due now (`docs/rules.md`, "Polls"). If the loop then dequeued again at once, a
//! limit below the local pool would cycle the same cards through Redis as fast as it can answer
//! (measured: ~1,700 commands a second for 5 polls a second). So before each dequeue the loop asks
//! how many slots are free and takes no more cards than that; with none free it waits until one of
//! its own polls of the type finishes, or after a growing pause (10 ms doubling to 1 s) for another
//! node's: about one question per poll, however many cards are due.

//!
//! The carrier budget is the other gate ([`DispatchBudget`]): with `CMP_GATEWAY_RATE_LIMIT`
//! below demand, the loop takes no more cards than the budget lets start within a short
//! horizon and otherwise waits, so cards wait in their sorted sets (visible as the due
//! backlog), oldest due first, instead of being dequeued, refused a slot and parked.

use polling_queue::{ConcurrencySemaphore, QueueError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use domain::TaskType;

/// How many polls of a type the carrier budget lets start now (`None`: no limit applies, e.g.
/// a type whose polls make no query). The worker implements it over the gateway client's
/// shared budget.
#[async_trait::async_trait]
pub trait DispatchBudget: Send + Sync {
    async fn room(&self, task: TaskType) -> Option<usize>;
    /// `polls` of `task` were just handed to the handlers on the strength of [`room`].
    fn dispatched(&self, task: TaskType, polls: usize);
    /// After [`room`](Self::room) answered 0 for `task`: how long until it can answer more
    /// (the booked-up bucket's next slot within the horizon). The loop sleeps that long,
    /// between [`BUDGET_PAUSE`] and [`BUDGET_PAUSE_MAX`], instead of asking again and again.
    fn free_in(&self, _task: TaskType) -> Duration {
        BUDGET_PAUSE
    }
}

/// Shortest pause between two looks at a budget that has no room (a slot comes free every
/// 1/rate seconds; the handlers' own reservation waits for the exact slot).
pub const BUDGET_PAUSE: Duration = Duration::from_millis(20);

/// Longest pause: a budget freed by an operator's edit is seen within it.
pub const BUDGET_PAUSE_MAX: Duration = Duration::from_secs(1);

/// `want` capped at the polls the budget lets start, waiting while it lets none. Answers 0
/// only on shutdown.
pub(crate) async fn budget_room(
    budget: &Arc<dyn DispatchBudget>,
    task: TaskType,
    want: usize,
    shutdown: &CancellationToken,
) -> usize {
    loop {
        match budget.room(task).await {
            None => return want,
            Some(room) if room > 0 => return want.min(room),
            Some(_) => {}
        }
        metrics::counter!("cmp_gateway_budget_waits_total", "task" => task.as_str()).increment(1);
        let pause = budget.free_in(task).clamp(BUDGET_PAUSE, BUDGET_PAUSE_MAX);
        tokio::select! {
            () = shutdown.cancelled() => return 0,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// The free cluster-wide slots the loop asks about: Redis's [`ConcurrencySemaphore`] in
/// production, a counter on paused time in the tests.
#[async_trait::async_trait]
pub(crate) trait SlotRoom: Send + Sync {
    async fn room(&self, task: TaskType) -> Result<u64, QueueError>;
}

#[async_trait::async_trait]
impl SlotRoom for ConcurrencySemaphore {
    async fn room(&self, task: TaskType) -> Result<u64, QueueError> {
        ConcurrencySemaphore::room(self, task).await
    }
}

const PAUSE_FIRST: Duration = Duration::from_millis(10);
const PAUSE_MAX: Duration = Duration::from_secs(1);

/// After a round the cluster-wide slots bounded, the loop waits for one of its polls to finish
/// (or this long) before it asks again: the slots it just filled are not taken until its
/// handlers start, and a question asked before would see them free.
pub(crate) const SLOT_PAUSE: Duration = PAUSE_MAX;

/// `want` capped at the free cluster-wide slots of `task`, waiting while there are none: until
/// one of this node's polls of `task` finishes (`finished`: a slot is free now), or after a
/// pause for another node's: 1 s while this node has polls of `task` running (`own_running`),
/// else growing from 10 ms to 1 s. Answers 0 only on shutdown. A semaphore that cannot be read
/// does not stop polling: the handlers' own acquire still enforces the limit.
pub(crate) async fn cluster_room(
    semaphore: &impl SlotRoom,
    task: TaskType,
    want: usize,
    (finished, own_running): (&Notify, bool),
    shutdown: &CancellationToken,
) -> usize {
    let mut pause = if own_running { PAUSE_MAX } else { PAUSE_FIRST };
    loop {
        match semaphore.room(task).await {
            Ok(0) => {}
            Ok(room) => return want.min(usize::try_from(room).unwrap_or(usize::MAX)),
            Err(e) => {
                tracing::warn!(task = %task, error = %e, "concurrency slots unreadable; dequeuing without the cap");
                return want;
            }
        }
        metrics::counter!("cmp_cluster_pool_full_waits_total", "task" => task.as_str())
            .increment(1);
        tokio::select! {
            () = shutdown.cancelled() => return 0,
            () = finished.notified() => {}
            () = tokio::time::sleep(pause) => pause = (pause * 2).min(PAUSE_MAX),
        }
    }
}

#[cfg(test)]
mod tests;
