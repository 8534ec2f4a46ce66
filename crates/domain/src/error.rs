use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// The error underneath another one (a database driver's, a Redis client's, a closed batch
/// writer's), kept whole so `source()` chains reach it. Cheap to clone: one failure answered
/// to every caller of a group-committed write is shared, not copied to text. Displays as the
/// error it holds; its `source()` is that error's source.
#[derive(Clone)]
pub struct Cause(Arc<dyn Error + Send + Sync + 'static>);

impl Cause {
    /// Keeps `error` as the cause.
    pub fn new(error: impl Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }

    /// A cause that is only a message (a condition with no underlying error, test doubles).
    pub fn msg(message: impl Into<String>) -> Self {
        Self::new(Message(message.into()))
    }

    /// The error held, when it is an `E`.
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl Error for Cause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

impl From<String> for Cause {
    fn from(message: String) -> Self {
        Self::msg(message)
    }
}

impl From<&str> for Cause {
    fn from(message: &str) -> Self {
        Self::msg(message)
    }
}

/// The error of [`Cause::msg`]: a message and nothing under it.
#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Message {}

/// Why a store call failed. Callers branch on the kind, never on the message.
#[derive(Debug, Clone, thiserror::Error)]
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
    /// The database could not be reached or failed; the driver's error is the source.
    #[error("database error: {0}")]
    Database(#[source] Cause),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner;

    #[test]
    fn cause_displays_and_chains_as_the_error_it_holds() {
        let error = StoreError::Database(Cause::new(Outer(Inner)));
        assert_eq!(error.to_string(), "database error: outer");
        let cause = error.source().expect("the cause");
        assert_eq!(cause.to_string(), "outer");
        assert_eq!(cause.source().expect("its source").to_string(), "inner");
        let Some(StoreError::Database(held)) = Some(error.clone()) else {
            unreachable!()
        };
        assert!(held.downcast_ref::<Outer>().is_some());
    }

    #[test]
    fn a_message_cause_has_no_source() {
        let error = StoreError::Database("connection closed".into());
        assert_eq!(error.to_string(), "database error: connection closed");
        assert!(error.source().expect("the cause").source().is_none());
    }
}
