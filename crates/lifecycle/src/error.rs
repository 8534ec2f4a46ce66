//! The crate's error type.

/// What can go wrong in a lifecycle event or an initializer run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleError {
    /// PostgreSQL could not be read.
    #[error(transparent)]
    Store(#[from] domain::StoreError),
    /// A queue operation failed.
    #[error(transparent)]
    Queue(#[from] polling_queue::QueueError),
    /// The queues were laid out for another shard count; re-initialising needs the old queues
    /// and `polling:init:progress` cleared first.
    #[error(
        "shard count mismatch: polling:init:progress records {recorded} shards, this process is configured with {configured}"
    )]
    ShardCountMismatch { recorded: u32, configured: u32 },
    /// Another node holds the initializer's lease.
    #[error("the initializer is already running on another node (lease `{job}` is held)")]
    LeaseHeld { job: String },
    /// The lease expired or was taken over while running; the run stopped.
    #[error("the job lost its lease `{job}` and stopped")]
    LeaseLost { job: String },
    /// The initializer already completed; run it in repair mode to re-check the queues.
    #[error("the initializer already completed; use repair mode to run it again")]
    AlreadyCompleted,
    /// `polling:init:progress` holds a value this crate does not write.
    #[error("unexpected value in polling:init:progress: {field} = `{value}`")]
    CorruptProgress { field: String, value: String },
    /// The run stopped because the process is shutting down.
    #[error("interrupted by shutdown")]
    Interrupted,
    /// A writer or reader task of the initializer panicked or was cancelled.
    #[error("initializer task failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}
