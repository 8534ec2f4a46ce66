//! Scenario 3 (full cycle with no-op handlers) and 6 (worker resident memory).
//!
//! N cards are due in the carddata queues of 16 shards (scores spread over the last hour, as
//! a backlog is). The real `Scheduler`, with the worker's default settings and pool sizes,
//! dequeues them and dispatches them to handlers that do nothing but what every handler does
//! last: reschedule the card (`ZADD XX` at now + 30 min). Cards/s = handled / elapsed, over a
//! fixed window or until every card was handled once. VmRSS is sampled meanwhile; a run with a
//! tenth of the fleet shows whether it grows with the fleet.

use crate::env::{BenchEnv, PREFIX, redis_pool};
use crate::report::{Row, Target, fmt_num};
use crate::rss;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::{CardId, SystemClock, TaskType};
use fred::prelude::ClientLike as _;
use polling_queue::{Keys, PollingQueueManager, QueueSettings, SingletonLease};
use scheduler::{PoolSizes, Scheduler, SchedulerSettings};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use task_handlers::{Outcome, Registry, TaskHandler};
use tokio_util::sync::CancellationToken;

/// The worker's defaults (`CMP_WORKER_POOL_*`, `CMP_REDIS_POOL_SIZE`, `CMP_SCHEDULER_*`).
pub(crate) const POOLS: PoolSizes = PoolSizes([64, 256, 64, 32]);
pub(crate) const WORKER_REDIS_POOL: usize = 8;

pub(crate) fn scheduler_settings() -> SchedulerSettings {
    SchedulerSettings {
        tick: Duration::from_secs(1),
        batch: 1000,
        pools: POOLS,
        retry_interval: Duration::from_secs(60),
        shutdown_grace: Duration::from_secs(30),
        backlog_every: Duration::from_secs(10),
    }
}

/// Reschedules the card, nothing else.
pub(crate) struct Noop {
    pub(crate) task: TaskType,
    pub(crate) queue: PollingQueueManager,
    pub(crate) done: Arc<AtomicU64>,
    pub(crate) failed: Arc<AtomicU64>,
}

#[async_trait]
impl TaskHandler for Noop {
    fn task_type(&self) -> TaskType {
        self.task
    }

    async fn handle(&self, card: CardId) -> Outcome {
        let next = Utc::now() + chrono::Duration::minutes(30);
        match self.queue.reschedule(card, self.task, next).await {
            Ok(()) => {
                self.done.fetch_add(1, Ordering::Relaxed);
                Outcome::Success
            }
            Err(_) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                Outcome::Failure
            }
        }
    }
}

pub(crate) struct CycleRun {
    pub(crate) cards_per_sec: f64,
    pub(crate) handled: u64,
    pub(crate) failed: u64,
    pub(crate) secs: f64,
    rss_start: u64,
    rss_peak: u64,
}

pub(crate) async fn run(env: &BenchEnv, cards: u64, window: Duration) -> anyhow::Result<Vec<Row>> {
    let small = (cards / 10).max(1_000);
    let little = one(env, small, window).await?;
    let big = one(env, cards, window).await?;
    let cycle = Row::new(
        format!(
            "full cycle, no-op handlers, {} due cards",
            fmt_num(cards as f64)
        ),
        big.cards_per_sec,
        "cards/s",
        None,
        // The target for the whole no-op cycle.
        Target::FigureAtLeast(80_000.0),
    )
    .note(format!(
        "{} handled in {:.1} s ({} failed); with {} cards: {:.0} cards/s",
        big.handled, big.secs, big.failed, small, little.cards_per_sec
    ));
    let memory = Row::new(
        format!("worker RSS, full cycle, {} cards", fmt_num(cards as f64)),
        rss::mb(big.rss_peak),
        "MB",
        Some((rss::mb(little.rss_peak), &format!("MB peak with {} cards", fmt_num(small as f64)))),
        Target::FigureAtMost(300.0),
    )
    .note(format!(
        "peak VmRSS of the bench process (scheduler + handlers + Redis pool); {:.0} MB before the run; ratio to the tenth-size fleet says whether it grows with N",
        rss::mb(big.rss_start)
    ));
    Ok(vec![cycle, memory])
}

pub(crate) async fn one(env: &BenchEnv, cards: u64, window: Duration) -> anyhow::Result<CycleRun> {
    let prefix = format!("{PREFIX}cycle:");
    env.clean_redis(&prefix).await?;
    let keys = Keys::new(prefix.clone());
    let pool = redis_pool(&env.redis_url, WORKER_REDIS_POOL).await?;
    let clock = Arc::new(SystemClock);
    let queue = PollingQueueManager::new(
        pool.clone(),
        keys.clone(),
        QueueSettings::default(),
        clock.clone(),
    );
    load_due(&queue, cards).await?;

    let (done, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let handlers = TaskType::ALL.map(|task| {
        Arc::new(Noop {
            task,
            queue: queue.clone(),
            done: done.clone(),
            failed: failed.clone(),
        }) as Arc<dyn TaskHandler>
    });
    let scheduler = Scheduler::new(
        queue.clone(),
        Registry::new(handlers),
        SingletonLease::new(pool.clone(), keys),
        clock,
        scheduler_settings(),
    );
    let sampler = rss::Sampler::start();
    let rss_start = sampler.start;
    let shutdown = CancellationToken::new();
    let started = Instant::now();
    let running = tokio::spawn(scheduler.run(shutdown.clone()));
    while started.elapsed() < window && done.load(Ordering::Relaxed) < cards {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    let handled = done.load(Ordering::Relaxed);
    shutdown.cancel();
    running.await.context("scheduler task")?;
    let rss_peak = sampler.finish();
    pool.quit().await.context("close the scheduler's pool")?;
    env.clean_redis(&prefix).await?;
    println!("  full cycle with {cards} cards: {handled} handled in {secs:.1} s");
    Ok(CycleRun {
        cards_per_sec: handled as f64 / secs,
        handled,
        failed: failed.load(Ordering::Relaxed),
        secs,
        rss_start,
        rss_peak,
    })
}

/// Ids 1..=n due over the last hour, in the carddata queues.
pub(crate) async fn load_due(queue: &PollingQueueManager, n: u64) -> anyhow::Result<()> {
    load_due_of(queue, TaskType::Carddata, n).await
}

/// Ids 1..=n due over the last hour, in the queues of `task`.
pub(crate) async fn load_due_of(
    queue: &PollingQueueManager,
    task: TaskType,
    n: u64,
) -> anyhow::Result<()> {
    let start = Utc::now() - chrono::Duration::hours(1);
    let mut from = 1u64;
    while from <= n {
        let to = (from + 99_999).min(n);
        let entries: Vec<(CardId, DateTime<Utc>)> = (from..=to)
            .map(|i| {
                (
                    CardId(i as i64),
                    start + chrono::Duration::milliseconds((i % 3_000_000) as i64),
                )
            })
            .collect();
        queue
            .requeue_many(task, &entries)
            .await
            .context("load due cards")?;
        from = to + 1;
    }
    Ok(())
}
