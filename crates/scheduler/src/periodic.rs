//! Periodic jobs of the main loop, each under a singleton lease so that one node runs it per
//! period however many nodes there are.

use polling_queue::SingletonLease;
use std::time::Duration;
use tokio::time::Instant;

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

pub(crate) struct Scheduled {
    pub(crate) job: Box<dyn PeriodicJob>,
    pub(crate) next: Instant,
}

impl Scheduled {
    /// Runs the job if it is due here and this node wins its lease for the period. The lease
    /// is kept for the whole period (not released), so the job runs at most once per period
    /// across the cluster.
    pub(crate) async fn run_if_due(&mut self, leases: &SingletonLease, now: Instant) {
        if now < self.next {
            return;
        }
        let every = self.job.every();
        self.next = now + every;
        let name = self.job.name();
        let ttl = every
            .saturating_sub(Duration::from_millis(500))
            .max(Duration::from_secs(1));
        match leases.try_acquire(name, ttl).await {
            Ok(Some(_held)) => {
                let started = std::time::Instant::now();
                match self.job.run().await {
                    Ok(()) => {
                        tracing::info!(
                            job = name,
                            ms = started.elapsed().as_millis() as u64,
                            "periodic job done"
                        );
                        metrics::counter!("cmp_periodic_jobs_total", "job" => name, "outcome" => "success").increment(1);
                    }
                    Err(e) => {
                        tracing::warn!(job = name, error = %e, "periodic job failed");
                        metrics::counter!("cmp_periodic_jobs_total", "job" => name, "outcome" => "failure").increment(1);
                    }
                }
            }
            Ok(None) => tracing::debug!(job = name, "another node holds the lease this period"),
            Err(e) => tracing::warn!(job = name, error = %e, "cannot take the job's lease"),
        }
    }
}
