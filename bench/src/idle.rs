//! Waiting costs nothing: the Redis commands a second of a node with nothing due.
//!
//! The real `Scheduler` with the worker's default settings (tick 1 s, the due backlog gauge
//! every 10 s) and all four task types, over 16 shards holding 10,000 cards of each type due in
//! an hour; handlers that would only reschedule. Redis's own `total_commands_processed`
//! (`INFO stats`, server-wide: nothing else runs meanwhile) is read over a window as long as the
//! wake horizon, so that every shard's question falls in it. The reference, in the same run:
//! the same node asking every shard every tick (`Scheduler::without_wakes`, what every loop did
//! before it could be woken).

use crate::cycle::{Noop, WORKER_REDIS_POOL, scheduler_settings};
use crate::env::{BenchEnv, PREFIX, redis_pool, redis_traffic};
use crate::report::{Row, Target};
use anyhow::Context;
use chrono::Utc;
use domain::{CardId, SystemClock, TaskType};
use polling_queue::{Keys, PollingQueueManager, QueueSettings, SingletonLease, WAKE_HORIZON};
use scheduler::Scheduler;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use task_handlers::{Registry, TaskHandler};
use tokio_util::sync::CancellationToken;

const CARDS_PER_TYPE: i64 = 10_000;

pub(crate) async fn run(env: &BenchEnv, quick: bool) -> anyhow::Result<Vec<Row>> {
    let window = if quick {
        WAKE_HORIZON / 3
    } else {
        WAKE_HORIZON * 2
    };
    let reference_window = Duration::from_secs(if quick { 5 } else { 10 });
    let ours = commands_per_sec(env, true, window).await?;
    let asking = commands_per_sec(env, false, reference_window).await?;
    println!("  idle node: {ours:.1} commands/s waiting for work, {asking:.1} asking every tick");
    Ok(vec![
        Row::new(
            "idle node: Redis commands/s, 4 types x 16 shards, nothing due",
            ours,
            "commands/s",
            Some((asking, "commands/s asking every shard every tick")),
            Target::FigureAtMost(50.0),
        )
        .note(format!(
            "INFO stats total_commands_processed over {} s, script calls included; worker defaults (tick 1 s, backlog gauge every 10 s)",
            window.as_secs()
        )),
    ])
}

/// Commands a second while a node waits over `window`, subscribed to wakes or not.
async fn commands_per_sec(env: &BenchEnv, wakes: bool, window: Duration) -> anyhow::Result<f64> {
    let prefix = format!("{PREFIX}idle:");
    env.clean_redis(&prefix).await?;
    let keys = Keys::new(prefix.clone());
    let pool = redis_pool(&env.redis_url, WORKER_REDIS_POOL).await?;
    let queue = PollingQueueManager::new(
        pool.clone(),
        keys.clone(),
        QueueSettings::default(),
        Arc::new(SystemClock),
    );
    let later = Utc::now() + chrono::Duration::hours(1);
    let entries: Vec<_> = (1..=CARDS_PER_TYPE).map(|i| (CardId(i), later)).collect();
    for task in TaskType::ALL {
        queue
            .requeue_many(task, &entries)
            .await
            .context("load the idle queues")?;
    }
    let handlers = TaskType::ALL.map(|task| {
        Arc::new(Noop {
            task,
            queue: queue.clone(),
            done: Arc::new(AtomicU64::new(0)),
            failed: Arc::new(AtomicU64::new(0)),
        }) as Arc<dyn TaskHandler>
    });
    let scheduler = Scheduler::new(
        queue.clone(),
        Registry::new(handlers),
        SingletonLease::new(pool.clone(), keys),
        Arc::new(SystemClock),
        scheduler_settings(),
    );
    let scheduler = if wakes {
        scheduler
    } else {
        scheduler.without_wakes()
    };
    let stop = CancellationToken::new();
    let run = tokio::spawn(scheduler.run(stop.clone()));
    // The first round asks every shard; the count starts after it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (before, _) = redis_traffic(&env.redis).await?;
    tokio::time::sleep(window).await;
    let (after, _) = redis_traffic(&env.redis).await?;
    stop.cancel();
    run.await.context("the idle scheduler")?;
    env.clean_redis(&prefix).await?;
    Ok(after.saturating_sub(before) as f64 / window.as_secs_f64())
}
