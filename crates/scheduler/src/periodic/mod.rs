//! Periodic jobs, each in its own tokio task (a slow job never delays dispatching, the gauges
//! or another job) and each under a singleton lease so that one node runs it per period
//! however many nodes there are.
//!
//! The lease is taken for the period and renewed while the job runs, so a run longer than the
//! period still excludes every other node; after the run it is kept (not released) until its
//! TTL ends, so the job runs at most once per period across the cluster. A job whose lease is
//! lost (expired during a Redis outage, taken by another node) is stopped at once: its future
//! is dropped, which rolls back the batch it was in (each batch is its own transaction).

pub use domain::periodic::{BoxError, PeriodicJob};
use polling_queue::{LeaseToken, QueueError, SingletonLease};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The lease store the jobs' timing logic talks to: Redis's [`SingletonLease`] in production, an
/// in-memory one on paused time in the tests.
#[async_trait::async_trait]
pub(crate) trait JobLeases: Clone + Send + Sync + 'static {
    /// The lease of `job` for `ttl`, or `None` while another holder has it.
    async fn try_acquire(&self, job: &str, ttl: Duration)
    -> Result<Option<LeaseToken>, QueueError>;
    /// Restarts the lease's TTL; `false`: it was lost.
    async fn renew(&self, lease: &LeaseToken) -> Result<bool, QueueError>;
}

#[async_trait::async_trait]
impl JobLeases for SingletonLease {
    async fn try_acquire(
        &self,
        job: &str,
        ttl: Duration,
    ) -> Result<Option<LeaseToken>, QueueError> {
        SingletonLease::try_acquire(self, job, ttl).await
    }

    async fn renew(&self, lease: &LeaseToken) -> Result<bool, QueueError> {
        SingletonLease::renew(self, lease).await
    }
}

/// How a job's lease is sized and renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeaseTiming {
    /// The lease's TTL: the period, less a margin so the next period's holder is not refused
    /// by a lease that is about to end.
    pub(crate) ttl: Duration,
    /// How often a running job renews it: three times per TTL, so one slow renewal does not
    /// lose it.
    pub(crate) renew_every: Duration,
}

impl LeaseTiming {
    pub(crate) fn for_period(every: Duration) -> Self {
        let ttl = every
            .saturating_sub(Duration::from_millis(500))
            .max(Duration::from_secs(1));
        LeaseTiming {
            ttl,
            renew_every: (ttl / 3).max(Duration::from_millis(100)),
        }
    }
}

/// Starts one task per job. Each stops starting runs when `shutdown` is cancelled; a run in
/// progress finishes (the caller bounds the wait with [`stop_jobs`]).
pub(crate) fn spawn_jobs<L: JobLeases>(
    jobs: Vec<Box<dyn PeriodicJob>>,
    leases: &L,
    shutdown: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    jobs.into_iter()
        .map(|job| tokio::spawn(job_loop(job, leases.clone(), shutdown.clone())))
        .collect()
}

/// Waits up to `grace` for the job tasks to end, then aborts the rest.
pub(crate) async fn stop_jobs(handles: Vec<JoinHandle<()>>, grace: Duration) {
    let deadline = Instant::now() + grace;
    for mut handle in handles {
        if tokio::time::timeout_at(deadline, &mut handle)
            .await
            .is_err()
        {
            tracing::warn!("a periodic job did not finish within the shutdown grace; aborted");
            handle.abort();
        }
    }
}

async fn job_loop<L: JobLeases>(job: Box<dyn PeriodicJob>, leases: L, shutdown: CancellationToken) {
    let mut next = Instant::now();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep_until(next) => {}
        }
        let every = job.every();
        next = Instant::now() + every;
        run_once(job.as_ref(), &leases, LeaseTiming::for_period(every)).await;
    }
}

/// Runs the job if this node wins its lease for the period, renewing the lease while it runs.
pub(crate) async fn run_once<L: JobLeases>(job: &dyn PeriodicJob, leases: &L, timing: LeaseTiming) {
    let name = job.name();
    let lease = match leases.try_acquire(name, timing.ttl).await {
        Ok(Some(lease)) => lease,
        Ok(None) => {
            tracing::debug!(job = name, "another node holds the lease this period");
            return;
        }
        Err(e) => {
            tracing::warn!(job = name, error = %e, "cannot take the job's lease");
            return;
        }
    };
    let started = std::time::Instant::now();
    let outcome = match run_holding(job, leases, &lease, timing).await {
        Some(Ok(())) => {
            tracing::info!(
                job = name,
                ms = started.elapsed().as_millis() as u64,
                "periodic job done"
            );
            "success"
        }
        Some(Err(e)) => {
            tracing::warn!(job = name, error = %e, "periodic job failed");
            "failure"
        }
        None => {
            tracing::error!(job = name, "periodic job stopped: its lease was lost");
            "lease_lost"
        }
    };
    metrics::counter!("cmp_periodic_jobs_total", "job" => name, "outcome" => outcome).increment(1);
}

/// The run, with the lease renewed every `renew_every`; `None` if the lease was lost.
async fn run_holding<L: JobLeases>(
    job: &dyn PeriodicJob,
    leases: &L,
    lease: &LeaseToken,
    timing: LeaseTiming,
) -> Option<Result<(), BoxError>> {
    let run = job.run();
    tokio::pin!(run);
    let mut renew =
        tokio::time::interval_at(Instant::now() + timing.renew_every, timing.renew_every);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            result = &mut run => return Some(result),
            _ = renew.tick() => match leases.renew(lease).await {
                Ok(true) => {}
                Ok(false) => return None,
                // Redis unreachable: the lease may still be ours; try again next tick.
                Err(e) => tracing::warn!(job = job.name(), error = %e, "cannot renew the job's lease"),
            },
        }
    }
}

#[cfg(test)]
mod tests;
