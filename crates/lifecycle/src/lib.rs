//! What happens to the queues when a card's life changes, and how the queues are first filled.
//!
//! * [`PollingLifecycleService`]: card created (one or a batch), status changed, enabled,
//!   disabled, deleted, and a device's polling switch flipped. Used by the API process (with no
//!   scheduler anywhere) and by the worker.
//! * [`CardInitializer`]: streams every polling-enabled card, matches its config and writes the
//!   whole fleet into the sharded queues with pipelined `ZADD NX`, under the singleton lease,
//!   with its progress in `polling:init:progress`.
//! * [`QueueChecker`]: the queues checked against the database (`cmp-worker check`), and
//!   [`QueueCheck`], the periodic job that runs it on one node and exports its counts.
//!
//! This crate owns those two flows. It reads PostgreSQL only through the store traits of
//! `domain` (never the `store` crate), takes key names from `polling-queue`'s [`Keys`]
//! (never spells a `polling:*` name) and must not depend on the scheduler or the handlers.
//!
//! [`Keys`]: polling_queue::Keys

mod check;
mod check_job;
mod error;
mod facts;
mod initializer;
mod reconcile;
mod service;

pub use check::{CheckReport, CheckSettings, Findings, Kind, QueueChecker};
pub use check_job::{
    QUEUE_CHECK_CARDS, QUEUE_CHECK_COMPLETED, QUEUE_CHECK_DURATION, QUEUE_CHECK_ENTRIES,
    QUEUE_CHECK_MEMBERS, QueueCheck,
};
pub use error::LifecycleError;
pub use initializer::{
    CardInitializer, InitMode, InitProgress, InitReport, InitSettings, InitStatus, InitWatchdog,
    WATCH_EVERY, first_score,
};
pub use reconcile::{QueueReconciler, RECONCILE_JOB, ReconcileReport, ReconcileSettings};
pub use service::{Outcome, PollingLifecycleService};
