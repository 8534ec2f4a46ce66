//! Periodic jobs against real Redis: their own task each, and a run stopped when another node
//! takes its lease. Their timing (once per period across nodes, the lease renewed while a run
//! lasts longer than it) is tested on paused time in `src/periodic/tests.rs`.

mod common;

use async_trait::async_trait;
use common::{Behaviour, Recorder, settings, wait_until, world};
use domain::{Clock, SystemClock, TaskType};
use polling_queue::{PollingQueueManager, SingletonLease};
use scheduler::{BoxError, PeriodicJob, Scheduler};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use task_handlers::{Registry, TaskHandler};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Counts its runs; while `gate` has no permit a run waits (a slow run).
struct Job {
    name: &'static str,
    every: Duration,
    runs: Arc<AtomicUsize>,
    gate: Option<Arc<Semaphore>>,
}

impl Job {
    fn counting(name: &'static str, every: Duration) -> Job {
        Job {
            name,
            every,
            runs: Arc::default(),
            gate: None,
        }
    }
}

#[async_trait]
impl PeriodicJob for Job {
    fn name(&self) -> &'static str {
        self.name
    }
    fn every(&self) -> Duration {
        self.every
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if let Some(gate) = &self.gate {
            let _permit = gate.acquire().await?;
        }
        Ok(())
    }
}

fn node(
    queue: &PollingQueueManager,
    leases: &SingletonLease,
    jobs: Vec<Job>,
    stop: &CancellationToken,
) -> JoinHandle<scheduler::ShutdownReport> {
    let handler = Recorder::new(TaskType::Realname, queue.clone(), Behaviour::Quick);
    let mut sched = Scheduler::new(
        queue.clone(),
        Registry::new([handler as Arc<dyn TaskHandler>]),
        leases.clone(),
        Arc::new(SystemClock) as Arc<dyn Clock>,
        settings(2),
    );
    for job in jobs {
        sched = sched.with_job(Box::new(job));
    }
    tokio::spawn(sched.run(stop.clone()))
}

#[tokio::test]
async fn a_slow_job_does_not_hold_up_the_others() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    let gate = Arc::new(Semaphore::new(0));
    let slow = Job {
        gate: Some(gate.clone()),
        ..Job::counting("stuck_job", Duration::from_secs(60))
    };
    let quick = Job::counting("quick_job", Duration::from_secs(60));
    let quick_runs = quick.runs.clone();
    let stop = CancellationToken::new();
    // The stuck job is first: run inline, it kept the loop from ever reaching the other.
    let n = node(&queue, &leases, vec![slow, quick], &stop);
    assert!(
        wait_until(
            || quick_runs.load(Ordering::SeqCst) == 1,
            Duration::from_secs(5)
        )
        .await
    );
    gate.add_permits(100);
    stop.cancel();
    n.await?;
    Ok(())
}

/// Sets its flag when dropped: shows that a run's future was dropped (stopped).
struct Dropped(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

struct Stoppable {
    started: Arc<AtomicUsize>,
    dropped: Arc<std::sync::atomic::AtomicBool>,
}

#[async_trait]
impl PeriodicJob for Stoppable {
    fn name(&self) -> &'static str {
        "lost_job"
    }
    fn every(&self) -> Duration {
        Duration::from_millis(1500)
    }
    async fn run(&self) -> Result<(), BoxError> {
        let _guard = Dropped(self.dropped.clone());
        self.started.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<()>().await;
        Ok(())
    }
}

#[tokio::test]
async fn a_run_whose_lease_is_taken_over_is_stopped() -> anyhow::Result<()> {
    use fred::prelude::*;
    let redis = test_support::TestRedis::new().await?;
    let pool = redis.pool().await?;
    let keys = polling_queue::Keys::new(redis.prefix.clone());
    let queue = PollingQueueManager::new(
        pool.clone(),
        keys.clone(),
        polling_queue::QueueSettings::default(),
        Arc::new(SystemClock),
    );
    let leases = SingletonLease::new(pool.clone(), keys.clone());
    let job = Stoppable {
        started: Arc::default(),
        dropped: Arc::default(),
    };
    let (started, dropped) = (job.started.clone(), job.dropped.clone());
    let handler = Recorder::new(TaskType::Realname, queue.clone(), Behaviour::Quick);
    let stop = CancellationToken::new();
    let sched = Scheduler::new(
        queue.clone(),
        Registry::new([handler as Arc<dyn TaskHandler>]),
        leases,
        Arc::new(SystemClock) as Arc<dyn Clock>,
        settings(2),
    )
    .with_job(Box::new(job));
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(
        wait_until(
            || started.load(Ordering::SeqCst) == 1,
            Duration::from_secs(5)
        )
        .await
    );
    // Another node took the lease (e.g. after it expired during a Redis outage).
    let key = keys.render(&polling_queue::RedisKey::Lease {
        job: "lost_job".into(),
    });
    let _: () = pool
        .set(key.as_str(), "another-node", None, None, false)
        .await?;
    assert!(
        wait_until(|| dropped.load(Ordering::SeqCst), Duration::from_secs(3)).await,
        "the run went on without its lease"
    );
    stop.cancel();
    run.await?;
    Ok(())
}
