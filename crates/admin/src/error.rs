//! The one error type of the admin services. `cmp-api` maps each variant to an HTTP answer.
//!
//! A failure of a dependency keeps its cause as [`source`](std::error::Error::source): the
//! variant's own text names the step only, and [`Chain`] renders the whole chain for a log
//! line or a report. The API's answer of such a failure is generic (it never shows the chain).

use domain::{StoreError, TaskType};
use lifecycle::LifecycleError;
use polling_config::ConfigError;
use polling_queue::QueueError;
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
    /// The carrier refused or failed; nothing was changed. The source is the stop or start
    /// that failed (`Gateway`, `UnexpectedStatus` or `CallCutOff`), with the carrier's error.
    #[error("carrier gateway")]
    Gateway(#[source] StopResumeError),
    /// The carrier does not know the card's ICCID: the platform's data and the carrier's
    /// disagree, retrying will not help.
    #[error("{0} is unknown to the carrier")]
    UnknownToCarrier(String),
    /// The database failed.
    #[error("store")]
    Store(#[from] StoreError),
    /// The stop/resume service failed other than at the carrier or the database (Redis).
    #[error("stop/resume")]
    StopResume(#[source] StopResumeError),
    /// Not one shard of the task type's queue could be read.
    #[error("no shard of {task} could be read")]
    ShardsUnreadable { task: TaskType },
    /// Redis (queues, counters, leases, semaphores) failed.
    #[error("queue")]
    Queue(#[source] QueueError),
    /// The polling lifecycle failed other than at the database.
    #[error("lifecycle")]
    Lifecycle(#[source] LifecycleError),
    /// A run lost the singleton lease it runs under, and stopped.
    #[error("lost the {0} lease; stopping")]
    LeaseLost(&'static str),
    /// No worker published the carriers' budget figures lately (the `carrier_budget` job).
    #[error("no carrier budget figures: the carrier_budget job has not run in the last 10 minutes")]
    BudgetUnknown,
    /// Reloading or publishing the polling configs failed.
    #[error("polling configs")]
    Configs(#[source] ConfigError),
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
            | StopResumeError::CallCutOff { .. }) => AdminError::Gateway(e),
            StopResumeError::Store(s) => AdminError::from_store(s),
            other => AdminError::StopResume(other),
        }
    }
}

impl From<LifecycleError> for AdminError {
    fn from(e: LifecycleError) -> Self {
        match e {
            LifecycleError::Store(s) => AdminError::from_store(s),
            other => AdminError::Lifecycle(other),
        }
    }
}

impl From<QueueError> for AdminError {
    fn from(e: QueueError) -> Self {
        AdminError::Queue(e)
    }
}

impl From<ConfigError> for AdminError {
    fn from(e: ConfigError) -> Self {
        AdminError::Configs(e)
    }
}

/// An error and its causes on one line, `outer: cause: cause`, for logs and reports. A cause
/// whose text already ends what is written (an error that prints its source itself) is not
/// repeated.
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            let next = c.to_string();
            if !text.ends_with(&next) {
                text.push_str(": ");
                text.push_str(&next);
            }
            cause = c.source();
        }
        f.write_str(&text)
    }
}

impl std::fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
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
