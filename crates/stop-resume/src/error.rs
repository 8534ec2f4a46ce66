//! The crate's error type.

use domain::{CardId, NetworkStatus, StoreError};
use gateway::GatewayError;
use polling_queue::QueueError;

/// Why an evaluation or operator action did not complete. In every case the card is left as it
/// was in the database; the caller reschedules the card at the retry interval.
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
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("redis: {0}")]
    Redis(#[from] QueueError),
}
