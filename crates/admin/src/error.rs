//! The one error type of the admin services. `cmp-api` maps each variant to an HTTP answer.

use domain::StoreError;

/// Why an admin operation was refused or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// The input is well-formed but a value is not acceptable; one entry per field.
    #[error("invalid input: {}", .0.iter().map(|f| format!("{}: {}", f.pointer, f.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
    /// The resource named by the request does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// A unique value is taken; names the field.
    #[error("{field} already exists")]
    Conflict { field: String },
    /// The database failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// Redis or another dependency failed.
    #[error("{0}")]
    Internal(String),
}

/// One rejected field: a JSON pointer (`/interval_secs`) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldError {
    pub pointer: String,
    pub message: String,
}

impl FieldError {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}
