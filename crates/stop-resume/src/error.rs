//! The crate's error type.

use domain::{CardId, NetworkStatus, StoreError};
use gateway::GatewayError;
use polling_queue::QueueError;
use std::time::Duration;

/// When a change refused under the carrier's change lock (`GatewayError::ChangeLocked`) is
/// tried again if the adapter did not say how long the lock holds.
pub const CHANGE_LOCK_DEFAULT: Duration = Duration::from_secs(300);

/// Why an evaluation or operator action did not complete. In every case the card is left as it
/// was in the database; the caller reschedules the card at the retry interval, or when
/// [`next_attempt_in`](Self::next_attempt_in) says.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StopResumeError {
    /// The card does not exist or is deleted: nothing to decide.
    #[error("card {0} not found")]
    CardNotFound(CardId),
    /// Another evaluation of the card held its lock for longer than the wait bound.
    #[error("card {0} is being evaluated elsewhere")]
    Busy(CardId),
    /// The carrier refused the stop or start after the client's tries.
    #[error("gateway {call} of card {card_id} failed")]
    Gateway {
        card_id: CardId,
        /// `stop` or `start`.
        call: &'static str,
        #[source]
        source: GatewayError,
    },
    /// The carrier answered, but with a status other than the one asked for.
    #[error("gateway {call} of card {card_id} answered network status {got:?}")]
    UnexpectedStatus {
        card_id: CardId,
        call: &'static str,
        got: NetworkStatus,
    },
    /// The carrier did not answer within `call_deadline`: the call was given up and its
    /// state-log row written `interrupted` (it may or may not have reached the carrier).
    #[error("gateway {call} of card {card_id} unanswered after {after:?}; given up")]
    CallCutOff {
        card_id: CardId,
        call: &'static str,
        after: std::time::Duration,
    },
    /// The carrier refused this change of the card with answers not understood
    /// [`REFUSALS_BEFORE_BACKOFF`](crate::REFUSALS_BEFORE_BACKOFF) times in a row (the card's
    /// `failed` state-log rows noted `refused`): it is not asked again before `retry_in` has passed.
    #[error(
        "gateway {call} of card {card_id} refused {refusals} times in a row; not asked again for {retry_in:?}"
    )]
    BackedOff {
        card_id: CardId,
        call: &'static str,
        refusals: usize,
        /// What is left of the back-off.
        retry_in: Duration,
    },
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("redis: {0}")]
    Redis(#[from] QueueError),
}

impl StopResumeError {
    /// When the caller should decide about the card again, if not at its retry interval: after
    /// the carrier's change lock (its window, else [`CHANGE_LOCK_DEFAULT`]), or once a
    /// back-off of refused changes ends. `None`: the retry interval.
    pub fn next_attempt_in(&self) -> Option<Duration> {
        match self {
            StopResumeError::Gateway {
                source: GatewayError::ChangeLocked { retry_after, .. },
                ..
            } => Some(retry_after.unwrap_or(CHANGE_LOCK_DEFAULT)),
            StopResumeError::BackedOff { retry_in, .. } => Some(*retry_in),
            _ => None,
        }
    }
}
