//! The crate's error type.

/// What can go wrong loading or publishing polling configs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// PostgreSQL could not be read.
    #[error("loading polling configs from the database: {0}")]
    Store(#[from] domain::StoreError),
    /// Redis refused, timed out or could not be reached.
    #[error("redis command failed: {0}")]
    Redis(#[from] fred::error::Error),
    /// A config in the Redis hash is not the JSON this crate writes.
    #[error("polling config json: {0}")]
    Json(#[from] serde_json::Error),
}
