//! The crate's error type.

/// What can go wrong talking to the polling keys.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// Redis refused, timed out or could not be reached.
    #[error("redis command failed: {0}")]
    Redis(#[from] fred::error::Error),
    /// A cached value could not be encoded or decoded.
    #[error("card cache json: {0}")]
    Json(#[from] serde_json::Error),
    /// A value read from Redis does not have the shape this crate writes. `source`: the parse
    /// error, when one said so.
    #[error("unexpected value at {key}: {detail}")]
    Corrupt {
        key: String,
        detail: String,
        #[source]
        source: Option<domain::Cause>,
    },
    /// A write group-committed with others failed (the shared pipeline's error) or its batch
    /// writer is gone.
    #[error("batched write failed: {0}")]
    Batch(#[source] domain::Cause),
}
