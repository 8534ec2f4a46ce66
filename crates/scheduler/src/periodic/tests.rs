//! The periodic jobs' timing on paused time, over an in-memory lease store that expires leases
//! on tokio's clock: once per period across nodes, renewal while a run outlasts its lease, a
//! lost lease stopping the run, the shutdown grace. (tests/periodic.rs runs jobs against real
//! Redis.)

use super::{JobLeases, LeaseTiming, PeriodicJob, spawn_jobs, stop_jobs};
use domain::periodic::BoxError;
use polling_queue::{LeaseToken, QueueError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Leases as Redis keeps them (`SET NX PX`, renewal by the holder only), on tokio's clock.
#[derive(Clone, Default)]
struct MemoryLeases(Arc<Mutex<Leases>>);

#[derive(Default)]
struct Leases {
    held: HashMap<String, (String, Instant)>,
    issued: usize,
}

impl MemoryLeases {
    /// Another node takes the lease of `job` (e.g. after it expired during a Redis outage).
    fn steal(&self, job: &str) {
        let mut l = self.0.lock().unwrap();
        let until = Instant::now() + Duration::from_secs(3600);
        l.held
            .insert(job.to_owned(), ("another-node".to_owned(), until));
    }
}

#[async_trait::async_trait]
impl JobLeases for MemoryLeases {
    async fn try_acquire(
        &self,
        job: &str,
        ttl: Duration,
    ) -> Result<Option<LeaseToken>, QueueError> {
        let mut l = self.0.lock().unwrap();
        let now = Instant::now();
        if l.held.get(job).is_some_and(|(_, until)| *until > now) {
            return Ok(None);
        }
        l.issued += 1;
        let token = format!("token-{}", l.issued);
        l.held.insert(job.to_owned(), (token.clone(), now + ttl));
        Ok(Some(LeaseToken {
            job: job.to_owned(),
            token,
            ttl,
        }))
    }

    async fn renew(&self, lease: &LeaseToken) -> Result<bool, QueueError> {
        let mut l = self.0.lock().unwrap();
        let now = Instant::now();
        match l.held.get_mut(&lease.job) {
            Some((token, until)) if *token == lease.token && *until > now => {
                *until = now + lease.ttl;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// Counts its runs and the most at once; while `gate` has no permit a run waits (a slow run).
#[derive(Clone)]
struct Job {
    name: &'static str,
    every: Duration,
    runs: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
    most_at_once: Arc<AtomicUsize>,
    gate: Option<Arc<Semaphore>>,
    /// Set when a run's future is dropped before it ended (stopped).
    dropped: Arc<AtomicBool>,
}

impl Job {
    fn counting(name: &'static str, every: Duration) -> Job {
        Job {
            name,
            every,
            runs: Arc::default(),
            running: Arc::default(),
            most_at_once: Arc::default(),
            gate: None,
            dropped: Arc::default(),
        }
    }

    fn gated(name: &'static str, every: Duration, gate: &Arc<Semaphore>) -> Job {
        Job {
            gate: Some(gate.clone()),
            ..Job::counting(name, every)
        }
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

/// Sets its flag when dropped unfinished.
struct Unfinished(Arc<AtomicBool>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl PeriodicJob for Job {
    fn name(&self) -> &'static str {
        self.name
    }
    fn every(&self) -> Duration {
        self.every
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        let guard = Unfinished(self.dropped.clone());
        if let Some(gate) = &self.gate {
            let _permit = gate.acquire().await?;
        }
        std::mem::forget(guard);
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

/// `nodes` nodes, each running its own instance of `job` over the shared lease store.
fn nodes(
    job: &Job,
    nodes: usize,
    leases: &MemoryLeases,
    stop: &CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..nodes)
        .flat_map(|_| spawn_jobs(vec![Box::new(job.clone())], leases, stop))
        .collect()
}

/// Lets every task run what it can at the current instant (paused time only moves when all of
/// them wait).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[test]
fn the_lease_is_the_period_less_a_margin_renewed_three_times_per_ttl() {
    let t = LeaseTiming::for_period(Duration::from_secs(60));
    assert_eq!(t.ttl, Duration::from_millis(59_500));
    assert_eq!(t.renew_every, Duration::from_millis(59_500) / 3);
    let short = LeaseTiming::for_period(Duration::from_millis(1_200));
    assert_eq!(short.ttl, Duration::from_secs(1));
    assert_eq!(short.renew_every, Duration::from_nanos(333_333_333));
    let tiny = LeaseTiming::for_period(Duration::from_millis(10));
    assert_eq!(tiny, short, "never below a 1 s lease");
}

#[tokio::test(start_paused = true)]
async fn a_periodic_job_runs_once_per_period_across_nodes() {
    let leases = MemoryLeases::default();
    let job = Job::counting("test_job", Duration::from_secs(60));
    let stop = CancellationToken::new();
    let handles = nodes(&job, 3, &leases, &stop);
    settle().await;
    assert_eq!(job.runs(), 1, "three nodes tried at once, one ran");
    // Until the period ends no node runs it again, however often they ask.
    tokio::time::advance(Duration::from_secs(59)).await;
    settle().await;
    assert_eq!(job.runs(), 1);
    // The next period: the lease (59.5 s) has ended and each node tries again; one runs it.
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(job.runs(), 2);
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    assert_eq!(job.runs(), 3);
    stop.cancel();
    stop_jobs(handles, Duration::from_secs(1)).await;
    assert_eq!(job.most_at_once.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_run_longer_than_its_lease_keeps_other_nodes_out() {
    let leases = MemoryLeases::default();
    // Every 1.5 s: the lease lasts 1 s and is renewed every 333 ms while the run lasts.
    let gate = Arc::new(Semaphore::new(0));
    let job = Job::gated("slow_job", Duration::from_millis(1500), &gate);
    let stop = CancellationToken::new();
    let first = nodes(&job, 1, &leases, &stop);
    settle().await;
    assert_eq!(job.runs(), 1);
    let second = nodes(&job, 1, &leases, &stop);
    // The second node tries at once and every 1.5 s after, all while the first run lasts far
    // past its 1 s lease; without renewal it took the expired lease and ran alongside.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(job.runs(), 1);
    assert_eq!(
        job.most_at_once.load(Ordering::SeqCst),
        1,
        "two runs at once"
    );
    // Once the run ends the lease is kept until its TTL ends, then a node runs it again.
    gate.add_permits(100);
    tokio::time::sleep(Duration::from_millis(2_600)).await;
    assert_eq!(job.runs(), 2);
    stop.cancel();
    stop_jobs(
        first.into_iter().chain(second).collect(),
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(job.most_at_once.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_run_whose_lease_is_taken_over_is_stopped_at_the_next_renewal() {
    let leases = MemoryLeases::default();
    let gate = Arc::new(Semaphore::new(0));
    let job = Job::gated("lost_job", Duration::from_millis(1500), &gate);
    let stop = CancellationToken::new();
    let handles = nodes(&job, 1, &leases, &stop);
    settle().await;
    assert_eq!(job.runs(), 1);
    leases.steal("lost_job");
    // The next renewal (333 ms after the start) finds the lease gone and drops the run.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!job.dropped.load(Ordering::SeqCst));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        job.dropped.load(Ordering::SeqCst),
        "the run went on without its lease"
    );
    stop.cancel();
    stop_jobs(handles, Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_the_grace_for_a_run_then_aborts_it() {
    let leases = MemoryLeases::default();
    let gate = Arc::new(Semaphore::new(0));
    let job = Job::gated("stuck_job", Duration::from_secs(60), &gate);
    let quick = Job::counting("quick_job", Duration::from_secs(60));
    let stop = CancellationToken::new();
    // The stuck job comes first: each job has its own task, so the other still runs.
    let handles = spawn_jobs(
        vec![Box::new(job.clone()), Box::new(quick.clone())],
        &leases,
        &stop,
    );
    settle().await;
    assert_eq!((job.runs(), quick.runs()), (1, 1));
    stop.cancel();
    let started = Instant::now();
    stop_jobs(handles, Duration::from_secs(5)).await;
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    settle().await;
    assert!(
        job.dropped.load(Ordering::SeqCst),
        "the stuck run was aborted"
    );
}
