//! The in-memory handler pools: one bounded semaphore per task type.

use domain::{CardId, TaskType};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

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
}

impl Pool {
    pub(crate) fn new(task: TaskType, size: usize) -> Self {
        Pool {
            task,
            size,
            permits: Arc::new(Semaphore::new(size)),
            in_flight: Mutex::new(HashSet::new()),
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
