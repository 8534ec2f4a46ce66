/// Why a store call failed. Callers branch on the kind, never on the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The row does not exist (or is soft-deleted).
    #[error("{entity} {id} not found")]
    NotFound { entity: &'static str, id: String },
    /// A unique constraint refused the write; `field` names the column.
    #[error("conflict on {field}: {message}")]
    Conflict { field: String, message: String },
    /// The database refused a value (foreign key, check constraint, bad enum string, ...).
    #[error("invalid data: {0}")]
    Invalid(String),
    /// The database could not be reached or failed.
    #[error("database error: {0}")]
    Database(String),
}

/// A business rule was violated by the input, independent of any I/O.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DomainError {
    #[error("invalid {field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}
