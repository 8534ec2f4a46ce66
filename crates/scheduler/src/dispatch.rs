//! [`Scheduler`]: the per-type dispatch loops, the periodic jobs and the shutdown.

use crate::gate::{BUDGET_PAUSE, DispatchBudget, budget_room, cluster_room};
use crate::periodic::{PeriodicJob, spawn_jobs, stop_jobs};
use crate::pools::{Pool, PoolSizes};
use crate::shards::{MIN_PER_SHARD, dequeue_shards, shares, take_manual};
use domain::{CardId, Clock};
use futures::FutureExt;
use polling_queue::{ConcurrencySemaphore, PollingQueueManager, SingletonLease};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use task_handlers::{Outcome, Registry, TaskHandler};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

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
}

struct Ctx {
    queue: PollingQueueManager,
    semaphore: Option<ConcurrencySemaphore>,
    budget: Option<Arc<dyn DispatchBudget>>,
    clock: Arc<dyn Clock>,
    settings: SchedulerSettings,
    tracker: TaskTracker,
    shutdown: CancellationToken,
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
        }
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
        let ctx = Arc::new(Ctx {
            queue: self.queue,
            semaphore: self.semaphore,
            budget: self.budget,
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
        main_loop(&ctx, &pools).await;
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

/// The gauges, until shutdown (periodic jobs run in their own tasks).
async fn main_loop(ctx: &Ctx, pools: &[Arc<Pool>]) {
    let mut next_backlog = tokio::time::Instant::now();
    let tick = ctx.settings.tick.min(Duration::from_secs(1));
    loop {
        let now = tokio::time::Instant::now();
        for pool in pools {
            metrics::gauge!("cmp_pool_in_use", "task" => pool.task.as_str())
                .set(pool.in_use() as f64);
        }
        if now >= next_backlog {
            next_backlog = now + ctx.settings.backlog_every;
            for pool in pools {
                match ctx.queue.get_due_backlog(pool.task).await {
                    Ok(n) => metrics::gauge!("cmp_due_backlog", "task" => pool.task.as_str())
                        .set(n as f64),
                    Err(e) => {
                        tracing::warn!(task = %pool.task, error = %e, "due backlog unavailable")
                    }
                }
            }
        }
        tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            _ = tokio::time::sleep(tick) => {}
        }
    }
}

/// One task type: manual list first, then every shard in parallel, as much as the pool holds.
async fn type_loop(ctx: Arc<Ctx>, pool: Arc<Pool>, handler: Arc<dyn TaskHandler>) {
    let task = pool.task;
    let shards = ctx.queue.settings().shard_count;
    let mut rotate = 0u32;
    // Shards asked since a dequeue last found something: the loop sleeps a tick only after a
    // whole sweep of the shards found nothing.
    let mut swept = 0u32;
    // Wait for this much room before dequeuing again while polls are running, so that one
    // round trip per shard moves a useful number of cards (a round of a few cards over every
    // shard costs as many round trips as a full one).
    let chunk = (pool.size / 4).clamp(1, MIN_PER_SHARD);
    while !ctx.shutdown.is_cancelled() {
        let free = pool.free();
        if free == 0 || (free < chunk && pool.in_use() > 0) {
            // Backpressure: dequeue nothing until polls finish.
            let want = u32::try_from(chunk).unwrap_or(1);
            tokio::select! {
                _ = ctx.shutdown.cancelled() => break,
                p = pool.permits.clone().acquire_many_owned(want) => drop(p),
                _ = tokio::time::sleep(ctx.settings.tick) => {}
            }
            continue;
        }
        let free = match &ctx.semaphore {
            Some(semaphore) => cluster_room(semaphore, task, free, &ctx.shutdown).await,
            None => free,
        };
        // Under the carrier budget: no more than it lets start; and after such a round a pause,
        // so that the handlers' reservations show in the budget before it is asked again.
        let (free, paced) = match &ctx.budget {
            Some(budget) if free > 0 => {
                let room = budget_room(budget, task, free, &ctx.shutdown).await;
                (room, room < free)
            }
            _ => (free, false),
        };
        if free == 0 {
            continue;
        }
        let mut cards = take_manual(&ctx.queue, task, free).await;
        metrics::counter!("cmp_dequeued_total", "task" => task.as_str(), "source" => "manual")
            .increment(cards.len() as u64);
        let room = free.saturating_sub(cards.len());
        if room > 0 {
            let plan = shares(room, shards, rotate);
            let asked = plan.len() as u32;
            rotate = rotate.wrapping_add(asked);
            let taken = dequeue_shards(&ctx.queue, task, plan, ctx.settings.batch).await;
            metrics::counter!("cmp_dequeued_total", "task" => task.as_str(), "source" => "shard")
                .increment(taken.len() as u64);
            swept = if taken.is_empty() { swept + asked } else { 0 };
            cards.extend(taken);
        }
        if cards.is_empty() {
            if swept < shards {
                continue;
            }
            swept = 0;
            tokio::select! {
                _ = ctx.shutdown.cancelled() => break,
                _ = tokio::time::sleep(ctx.settings.tick) => {}
            }
            continue;
        }
        if let Some(budget) = &ctx.budget {
            budget.dispatched(task, cards.len());
        }
        for card in cards {
            dispatch(&ctx, &pool, &handler, card).await;
        }
        if paced {
            tokio::select! {
                _ = ctx.shutdown.cancelled() => break,
                _ = tokio::time::sleep(BUDGET_PAUSE) => {}
            }
        }
    }
}

/// Hands one card to the pool (waiting for room if a manual card overshot it).
async fn dispatch(ctx: &Arc<Ctx>, pool: &Arc<Pool>, handler: &Arc<dyn TaskHandler>, card: CardId) {
    let permit = match pool.permits.clone().try_acquire_owned() {
        Ok(p) => p,
        Err(_) => match pool.permits.clone().acquire_owned().await {
            Ok(p) => p,
            Err(_) => return, // the semaphore is never closed
        },
    };
    if !pool.start(card) {
        // Being polled here right now, yet dequeued (or claimed by a manual trigger) again:
        // its handler has already put it back (due now when the cluster pool or the carrier
        // budget had no room) and this round leased it anew. Dropping it would leave it leased
        // until the lease ends; hand it back due now instead, for the next round.
        let task = pool.task;
        if let Err(e) = ctx.queue.reschedule(card, task, ctx.clock.now()).await {
            tracing::warn!(card_id = %card, task = %task, error = %e, "cannot hand back a card polled twice at once; its lease brings it back");
        }
        return;
    }
    let (ctx, pool, handler) = (ctx.clone(), pool.clone(), handler.clone());
    let task = pool.task;
    ctx.tracker.clone().spawn(async move {
        let _permit = permit;
        let span = tracing::info_span!("poll", card_id = %card, task = %task);
        let started = std::time::Instant::now();
        let outcome = match AssertUnwindSafe(handler.handle(card).instrument(span)).catch_unwind().await {
            Ok(o) => o,
            Err(_) => {
                tracing::error!(card_id = %card, task = %task, "handler panicked; card rescheduled at the retry interval");
                let at = ctx.clock.now() + chrono::Duration::from_std(ctx.settings.retry_interval).unwrap_or_default();
                if let Err(e) = ctx.queue.reschedule(card, task, at).await {
                    tracing::error!(card_id = %card, task = %task, error = %e, "reschedule after panic failed; the lease brings the card back");
                }
                Outcome::Failure
            }
        };
        pool.metrics.handled(outcome).increment(1);
        pool.metrics.duration.record(started.elapsed().as_secs_f64());
        pool.finish(card);
    });
}

/// After the loops stopped: wait for running polls, then hand back what is left.
async fn drain(ctx: &Ctx, pools: &[Arc<Pool>]) -> ShutdownReport {
    ctx.tracker.close();
    let drained = tokio::time::timeout(ctx.settings.shutdown_grace, ctx.tracker.wait())
        .await
        .is_ok();
    let mut rescheduled = 0;
    if !drained {
        let now = ctx.clock.now();
        for pool in pools {
            let left: Vec<(CardId, chrono::DateTime<chrono::Utc>)> =
                pool.in_flight().into_iter().map(|c| (c, now)).collect();
            if left.is_empty() {
                continue;
            }
            match ctx.queue.reschedule_many(pool.task, &left).await {
                Ok(_) => rescheduled += left.len(),
                Err(e) => {
                    tracing::error!(task = %pool.task, cards = left.len(), error = %e, "could not hand cards back; their lease brings them back")
                }
            }
        }
    }
    tracing::info!(drained, rescheduled, "scheduler stopped");
    ShutdownReport {
        drained,
        rescheduled,
    }
}
