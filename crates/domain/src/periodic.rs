//! The contract of a periodic job. The scheduler runs jobs; the crates that own the work
//! (lifecycle, task handlers, admin) implement them beside their services, and the worker only
//! registers them. It lives here so that none of those crates has to depend on the scheduler.

use std::time::Duration;

/// The error type of a periodic job (jobs live in other crates with their own errors).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A job the scheduler runs every `every()` on one node of the cluster.
#[async_trait::async_trait]
pub trait PeriodicJob: Send + Sync {
    /// The lease name (`polling:lease:{name}`) and the log/metric label.
    fn name(&self) -> &'static str;
    fn every(&self) -> Duration;
    async fn run(&self) -> Result<(), BoxError>;
}
