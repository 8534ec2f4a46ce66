//! The one error type of the admin services. `cmp-api` maps each variant to an HTTP answer.

use domain::StoreError;
use stop_resume::StopResumeError;

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
    /// The card is being evaluated by someone else right now; try again.
    #[error("{0} is busy; try again")]
    Busy(String),
    /// The carrier refused or failed; nothing was changed.
    #[error("carrier gateway: {0}")]
    Gateway(String),
    /// The carrier does not know the card's ICCID: the platform's data and the carrier's
    /// disagree, retrying will not help.
    #[error("{0} is unknown to the carrier")]
    UnknownToCarrier(String),
    /// The database failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// Redis or another dependency failed.
    #[error("{0}")]
    Internal(String),
}

impl AdminError {
    /// One invalid field.
    pub fn invalid(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        AdminError::Invalid(vec![FieldError::new(pointer, message)])
    }

    /// The store's "not found" and "conflict" become ours; anything else stays a store error.
    pub(crate) fn from_store(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { entity, id } => AdminError::NotFound(format!("{entity} {id}")),
            StoreError::Conflict { field, .. } => AdminError::Conflict { field },
            StoreError::Invalid(message) => AdminError::invalid("", message),
            other => AdminError::Store(other),
        }
    }
}

impl From<StopResumeError> for AdminError {
    fn from(e: StopResumeError) -> Self {
        match e {
            StopResumeError::CardNotFound(id) => AdminError::NotFound(format!("card {id}")),
            StopResumeError::Busy(id) => AdminError::Busy(format!("card {id}")),
            StopResumeError::Gateway {
                card_id,
                source: gateway::GatewayError::NotFound,
                ..
            } => AdminError::UnknownToCarrier(format!("card {card_id}")),
            e @ (StopResumeError::Gateway { .. }
            | StopResumeError::UnexpectedStatus { .. }
            | StopResumeError::CallCutOff { .. }) => AdminError::Gateway(e.to_string()),
            StopResumeError::Store(s) => AdminError::from_store(s),
            other => AdminError::Internal(other.to_string()),
        }
    }
}

impl From<lifecycle::LifecycleError> for AdminError {
    fn from(e: lifecycle::LifecycleError) -> Self {
        match e {
            lifecycle::LifecycleError::Store(s) => AdminError::from_store(s),
            other => AdminError::Internal(format!("lifecycle: {other}")),
        }
    }
}

impl From<polling_queue::QueueError> for AdminError {
    fn from(e: polling_queue::QueueError) -> Self {
        AdminError::Internal(format!("queue: {e}"))
    }
}

impl From<polling_config::ConfigError> for AdminError {
    fn from(e: polling_config::ConfigError) -> Self {
        AdminError::Internal(format!("polling configs: {e}"))
    }
}

/// One rejected field: a JSON pointer (`/interval_secs`) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldError {
    /// JSON pointer (RFC 6901) to the value, e.g. `/realname_interval_secs` or `/cards/3/iccid`.
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

/// Collects field errors; [`finish`](Checks::finish) answers `Invalid` if any.
#[derive(Debug, Default)]
pub(crate) struct Checks(Vec<FieldError>);

impl Checks {
    pub(crate) fn fail(&mut self, pointer: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(pointer, message));
    }

    pub(crate) fn check(&mut self, ok: bool, pointer: &str, message: &str) {
        if !ok {
            self.fail(pointer, message);
        }
    }

    /// A required text: trimmed, not empty, at most `max` characters.
    pub(crate) fn text(&mut self, value: &str, pointer: &str, max: usize) {
        if value.trim().is_empty() {
            self.fail(pointer, "must not be empty");
        } else if value.chars().count() > max {
            self.fail(pointer, format!("must be at most {max} characters"));
        }
    }

    pub(crate) fn into_errors(self) -> Vec<FieldError> {
        self.0
    }

    pub(crate) fn finish(self) -> Result<(), AdminError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(AdminError::Invalid(self.0))
        }
    }
}

/// `?` on store results inside the services.
pub(crate) trait StoreResultExt<T> {
    fn admin(self) -> Result<T, AdminError>;
}

impl<T> StoreResultExt<T> for Result<T, StoreError> {
    fn admin(self) -> Result<T, AdminError> {
        self.map_err(AdminError::from_store)
    }
}
