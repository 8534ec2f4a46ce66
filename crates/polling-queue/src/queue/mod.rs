//! The sharded queues, the manual lists and the decisive lanes:
//! [`PollingQueueManager`](manager::PollingQueueManager) and what it does to them (enqueue,
//! lease-based dequeue, reschedule, alignment with the matched configs, removal, the `check`
//! scan), the scores they hold, and the initializer's bulk writes with the reconciliation's
//! progress.

pub(crate) mod align;
mod bulk_resp;
pub(crate) mod check;
mod claim;
mod decisive;
pub(crate) mod init;
pub(crate) mod manager;
mod manual;
mod manual_remove;
pub(crate) mod probe;
pub(crate) mod reconcile_progress;
mod remove;
mod reschedule;
pub(crate) mod score;
pub(crate) mod wake;

/// Members per ZADD/ZREM command in batch operations (keeps each command small). Here, not in
/// `manager`, so that the writers `manager` builds (`reschedule`) do not depend back on it.
const CHUNK: usize = 1_000;
