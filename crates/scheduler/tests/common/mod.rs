//! What the scheduler tests share: a recording handler, settings, a Redis world, waits.
#![allow(dead_code, unreachable_pub)]

use async_trait::async_trait;
use chrono::Utc;
use domain::{CardId, SystemClock, TaskType};
use polling_queue::{Keys, PollingQueueManager, QueueSettings, SingletonLease};
use scheduler::{PoolSizes, SchedulerSettings};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use task_handlers::{Outcome, TaskHandler};
use test_support::TestRedis;

#[derive(Clone, Copy)]
pub enum Behaviour {
    /// Reschedule one hour out at once.
    Quick,
    /// Sleep, then reschedule.
    Slow(Duration),
    /// Panic on this card, reschedule the others.
    PanicOn(CardId),
    /// Never finish.
    Hang,
    /// Sleep, then put the card back due now: a backlog that never ends.
    Endless(Duration),
}

pub struct Recorder {
    pub task: TaskType,
    pub queue: PollingQueueManager,
    pub behaviour: Behaviour,
    pub seen: Mutex<HashMap<CardId, usize>>,
    /// When each card's first poll started.
    pub seen_at: Mutex<HashMap<CardId, std::time::Instant>>,
    pub running: AtomicUsize,
    pub max_running: AtomicUsize,
}

impl Recorder {
    pub fn new(task: TaskType, queue: PollingQueueManager, behaviour: Behaviour) -> Arc<Self> {
        Arc::new(Recorder {
            task,
            queue,
            behaviour,
            seen: Mutex::new(HashMap::new()),
            seen_at: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
            max_running: AtomicUsize::new(0),
        })
    }

    pub fn seen(&self) -> HashMap<CardId, usize> {
        self.seen.lock().expect("lock").clone()
    }

    /// When the first poll of `card` started, if it was polled.
    pub fn seen_at(&self, card: CardId) -> Option<std::time::Instant> {
        self.seen_at.lock().expect("lock").get(&card).copied()
    }
}

#[async_trait]
impl TaskHandler for Recorder {
    fn task_type(&self) -> TaskType {
        self.task
    }

    async fn handle(&self, card: CardId) -> Outcome {
        *self.seen.lock().expect("lock").entry(card).or_default() += 1;
        self.seen_at
            .lock()
            .expect("lock")
            .entry(card)
            .or_insert_with(std::time::Instant::now);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        match self.behaviour {
            Behaviour::Quick => {}
            Behaviour::Slow(d) => tokio::time::sleep(d).await,
            Behaviour::PanicOn(p) if p == card => panic!("handler bug on card {card}"),
            Behaviour::PanicOn(_) => {}
            Behaviour::Hang => std::future::pending::<()>().await,
            Behaviour::Endless(d) => tokio::time::sleep(d).await,
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        let next = match self.behaviour {
            Behaviour::Endless(_) => Utc::now(),
            _ => Utc::now() + chrono::Duration::hours(1),
        };
        self.queue
            .reschedule(card, self.task, next)
            .await
            .expect("reschedule");
        Outcome::Success
    }
}

pub fn settings(pool: usize) -> SchedulerSettings {
    SchedulerSettings {
        tick: Duration::from_millis(50),
        batch: 1000,
        pools: PoolSizes([pool; 4]),
        retry_interval: Duration::from_secs(60),
        shutdown_grace: Duration::from_millis(300),
        backlog_every: Duration::from_secs(1),
    }
}

pub async fn world() -> anyhow::Result<(TestRedis, PollingQueueManager, SingletonLease)> {
    let redis = TestRedis::new().await?;
    let (queue, leases) = queue_on(&redis).await?;
    Ok((redis, queue, leases))
}

/// 16 shards, a 300 s lease, on `redis`'s key space.
pub async fn queue_on(redis: &TestRedis) -> anyhow::Result<(PollingQueueManager, SingletonLease)> {
    let pool = redis.pool().await?;
    let keys = Keys::new(redis.prefix.clone());
    let queue = PollingQueueManager::new(
        pool.clone(),
        keys.clone(),
        QueueSettings {
            shard_count: 16,
            lease: Duration::from_secs(300),
        },
        Arc::new(SystemClock),
    );
    Ok((queue, SingletonLease::new(pool, keys)))
}

pub async fn seed_due(queue: &PollingQueueManager, task: TaskType, n: i64) -> anyhow::Result<()> {
    let now = Utc::now() - chrono::Duration::seconds(1);
    let entries: Vec<_> = (1..=n).map(|i| (CardId(i), now)).collect();
    queue.requeue_many(task, &entries).await?;
    Ok(())
}

pub async fn wait_until(mut cond: impl FnMut() -> bool, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}
