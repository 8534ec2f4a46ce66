//! The in-memory handler pools: one bounded semaphore per task type.

use domain::{CardId, TaskType};
use metrics::{Counter, Histogram};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use task_handlers::Outcome;
use tokio::sync::{Notify, Semaphore};

/// Handler pool sizes per task type (`CMP_WORKER_POOL_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSizes(pub [usize; 4]);

impl PoolSizes {
    pub fn get(&self, task: TaskType) -> usize {
        self.0[task.index()]
    }
}

/// One task type's pool: permits bound the cards in flight; the set names them, so that a
/// shutdown can hand the unfinished ones back to the queue.
#[derive(Debug)]
pub(crate) struct Pool {
    pub(crate) task: TaskType,
    pub(crate) size: usize,
    pub(crate) permits: Arc<Semaphore>,
    in_flight: Mutex<HashSet<CardId>>,
    /// Notified when a poll of this pool finishes: a loop waiting for cluster-wide room asks
    /// again then, since its own slot has just come free.
    pub(crate) finished: Notify,
    /// `cmp_tasks_handled_total` of this type, one handle per outcome, and
    /// `cmp_task_duration_seconds`: registered once (building the labelled key of every poll
    /// was a visible share of the no-op cycle's profile).
    pub(crate) metrics: PollMetrics,
}

/// The per-poll metrics of one task type, registered when the pool is built (the worker
/// installs its recorder before it starts the scheduler).
#[derive(Debug)]
pub(crate) struct PollMetrics {
    success: Counter,
    failure: Counter,
    requeued_full: Counter,
    skipped: Counter,
    pub(crate) duration: Histogram,
}

impl PollMetrics {
    fn new(task: TaskType) -> Self {
        let handled = |outcome: Outcome| metrics::counter!("cmp_tasks_handled_total", "task" => task.as_str(), "outcome" => outcome.as_str());
        PollMetrics {
            success: handled(Outcome::Success),
            failure: handled(Outcome::Failure),
            requeued_full: handled(Outcome::RequeuedFull),
            skipped: handled(Outcome::Skipped),
            duration: metrics::histogram!("cmp_task_duration_seconds", "task" => task.as_str()),
        }
    }

    pub(crate) fn handled(&self, outcome: Outcome) -> &Counter {
        match outcome {
            Outcome::Success => &self.success,
            Outcome::Failure => &self.failure,
            Outcome::RequeuedFull => &self.requeued_full,
            Outcome::Skipped => &self.skipped,
        }
    }
}

impl Pool {
    pub(crate) fn new(task: TaskType, size: usize) -> Self {
        Pool {
            task,
            size,
            permits: Arc::new(Semaphore::new(size)),
            in_flight: Mutex::new(HashSet::new()),
            finished: Notify::new(),
            metrics: PollMetrics::new(task),
        }
    }

    pub(crate) fn free(&self) -> usize {
        self.permits.available_permits()
    }

    pub(crate) fn in_use(&self) -> usize {
        self.size - self.free()
    }

    /// Marks a card in flight; `false` if it already is (a manual trigger of a card the pool
    /// is polling right now: the running poll covers it).
    pub(crate) fn start(&self, card: CardId) -> bool {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(card)
    }

    pub(crate) fn finish(&self, card: CardId) {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&card);
        self.finished.notify_one();
    }

    pub(crate) fn in_flight(&self) -> Vec<CardId> {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect()
    }
}
