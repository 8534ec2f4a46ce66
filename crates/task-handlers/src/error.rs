//! The crate's error type.

use batch::BatchError;
use domain::{CardId, NetworkStatus, StoreError};
use gateway::GatewayError;
use polling_queue::QueueError;
use std::sync::Arc;
use stop_resume::StopResumeError;

/// Why a poll or a periodic job did not complete. A handler never returns it: it reschedules
/// the card at the retry interval and reports [`crate::Outcome::Failure`] instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// The carrier did not answer a query (timeout, throttling, 5xx, transport, decode).
    #[error("gateway: {0}")]
    Gateway(#[from] GatewayError),
    /// A forced stop or start was answered with another network status than asked for.
    #[error("gateway {call} of card {card_id} answered network status {got:?}")]
    UnexpectedStatus {
        card_id: CardId,
        /// `stop` or `start`.
        call: &'static str,
        got: NetworkStatus,
    },
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("redis: {0}")]
    Redis(#[from] QueueError),
    #[error("stop/resume: {0}")]
    StopResume(#[from] StopResumeError),
    /// The card could not be added to the queues its new facts schedule.
    #[error("queues: {0}")]
    Lifecycle(#[from] lifecycle::LifecycleError),
    /// A read served together with concurrent polls failed.
    #[error("{0}")]
    BatchedRead(#[source] BatchedReadError),
}

/// Why a read served together with concurrent polls (card identities, snapshots, protect
/// states: see `batch`) has no answer. Every poll of the batch gets the same one.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BatchedReadError {
    /// The batch's store read failed.
    #[error("store: {0}")]
    Store(#[source] Arc<StoreError>),
    /// The batch's Redis read failed.
    #[error("redis: {0}")]
    Redis(#[source] Arc<QueueError>),
    /// The batch's flush task is gone (runtime shut down, or its flush panicked).
    #[error("batched read: {0}")]
    Closed(#[source] BatchError),
}

impl From<StoreError> for BatchedReadError {
    fn from(error: StoreError) -> Self {
        BatchedReadError::Store(Arc::new(error))
    }
}

impl From<QueueError> for BatchedReadError {
    fn from(error: QueueError) -> Self {
        BatchedReadError::Redis(Arc::new(error))
    }
}
