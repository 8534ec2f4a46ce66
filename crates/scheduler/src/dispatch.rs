//! [`Scheduler`]: its settings and builder, and the run that starts the per-type dispatch loops
//! (`type_loop`), the periodic jobs (`periodic`) and the gauges, then drains at shutdown
//! (`upkeep`).

use crate::gate::DispatchBudget;
use crate::periodic::{PeriodicJob, spawn_jobs, stop_jobs};
use crate::pools::{Pool, PoolSizes};
use crate::type_loop::type_loop;
use crate::upkeep::{drain, main_loop, probe_loop};
use domain::Clock;
use polling_queue::{ConcurrencySemaphore, PollingQueueManager, SingletonLease, WakeProbe, Wakes};
use std::sync::Arc;
use std::time::Duration;
use task_handlers::Registry;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How the scheduler runs (from `CMP_SCHEDULER_*`, `CMP_WORKER_POOL_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerSettings {
    /// Sleep of a loop that found no due card.
    pub tick: Duration,
    /// Most cards taken from one shard in one dequeue.
    pub batch: usize,
    pub pools: PoolSizes,
    /// Delay before a card whose handler panicked is polled again.
    pub retry_interval: Duration,
    /// How long running polls may finish after a shutdown request.
    pub shutdown_grace: Duration,
    /// How often the due backlog gauge is sampled.
    pub backlog_every: Duration,
}

/// How the scheduler stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Every running poll finished within the grace period.
    pub drained: bool,
    /// Cards still running at the end of the grace period, handed back to their queues due now.
    pub rescheduled: usize,
}

/// The dispatch loop of one worker node.
pub struct Scheduler {
    queue: PollingQueueManager,
    handlers: Registry,
    leases: SingletonLease,
    clock: Arc<dyn Clock>,
    settings: SchedulerSettings,
    jobs: Vec<Box<dyn PeriodicJob>>,
    semaphore: Option<ConcurrencySemaphore>,
    budget: Option<Arc<dyn DispatchBudget>>,
    /// Subscribe to `polling:queue:wake` (see `type_loop`).
    wakes: bool,
}

/// What the loops of one run share.
pub(crate) struct Ctx {
    pub(crate) queue: PollingQueueManager,
    pub(crate) semaphore: Option<ConcurrencySemaphore>,
    pub(crate) budget: Option<Arc<dyn DispatchBudget>>,
    /// What writers announce on `polling:queue:wake` (`None`: the subscription failed; the
    /// loops then ask every tick).
    pub(crate) wakes: Option<Wakes>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) settings: SchedulerSettings,
    /// The running polls, waited for at shutdown.
    pub(crate) tracker: TaskTracker,
    pub(crate) shutdown: CancellationToken,
}

impl Scheduler {
    pub fn new(
        queue: PollingQueueManager,
        handlers: Registry,
        leases: SingletonLease,
        clock: Arc<dyn Clock>,
        settings: SchedulerSettings,
    ) -> Self {
        Scheduler {
            queue,
            handlers,
            leases,
            clock,
            settings,
            jobs: Vec::new(),
            semaphore: None,
            budget: None,
            wakes: true,
        }
    }

    /// Asks every shard every tick instead of sleeping until a shard has work: for a Redis
    /// that refuses `SUBSCRIBE` (some proxies), and the benchmark's reference.
    pub fn without_wakes(mut self) -> Self {
        self.wakes = false;
        self
    }

    /// Dequeues no more cards than the carrier budget lets start (see `gate`). The worker
    /// sets it over its gateway client.
    pub fn with_budget(mut self, budget: Arc<dyn DispatchBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Dequeues no more cards of a type than its cluster-wide pool has free slots (see
    /// `gate`). The worker always sets it.
    pub fn with_semaphore(mut self, semaphore: ConcurrencySemaphore) -> Self {
        self.semaphore = Some(semaphore);
        self
    }

    /// Adds a periodic job (package activation check, data reset, ...).
    pub fn with_job(mut self, job: Box<dyn PeriodicJob>) -> Self {
        self.jobs.push(job);
        self
    }

    /// Runs until `shutdown` is cancelled; then stops dequeuing, lets running polls finish for
    /// up to the grace period and hands the rest back to their queues, due now.
    pub async fn run(self, shutdown: CancellationToken) -> ShutdownReport {
        let wakes = if !self.wakes {
            None
        } else {
            match self.queue.listen_wakes(shutdown.clone()).await {
                Ok(wakes) => Some(wakes),
                Err(error) => {
                    tracing::warn!(%error, "cannot subscribe to queue wakes; every shard is asked every tick");
                    None
                }
            }
        };
        // The probe's first look, before any loop asks: a wake written from now on is seen by
        // the next look even if its message is lost.
        let probe = match &wakes {
            Some(wakes) => {
                let mut probe = WakeProbe::new(self.handlers.task_types());
                if let Err(error) = self.queue.probe_wakes(&mut probe, wakes).await {
                    tracing::warn!(%error, "first look at the manual lists and the wake ledger failed; the next tick looks again");
                }
                Some(probe)
            }
            None => None,
        };
        let ctx = Arc::new(Ctx {
            queue: self.queue,
            semaphore: self.semaphore,
            budget: self.budget,
            wakes,
            clock: self.clock,
            settings: self.settings,
            tracker: TaskTracker::new(),
            shutdown,
        });
        let mut pools = Vec::new();
        let mut loops = Vec::new();
        for task in self.handlers.task_types() {
            let Some(handler) = self.handlers.get(task).cloned() else {
                continue;
            };
            let pool = Arc::new(Pool::new(task, ctx.settings.pools.get(task).max(1)));
            pools.push(pool.clone());
            loops.push(tokio::spawn(type_loop(ctx.clone(), pool, handler)));
        }
        tracing::info!(
            task_types = pools.len(),
            jobs = self.jobs.len(),
            "scheduler started"
        );
        let jobs = spawn_jobs(self.jobs, &self.leases, &ctx.shutdown);
        let probing = probe.map(|probe| tokio::spawn(probe_loop(ctx.clone(), probe)));
        main_loop(&ctx, &pools).await;
        if let Some(probing) = probing {
            let _ = probing.await;
        }
        for l in loops {
            let _ = l.await;
        }
        let (report, ()) = tokio::join!(
            drain(&ctx, &pools),
            stop_jobs(jobs, ctx.settings.shutdown_grace)
        );
        report
    }
}
