//! The dispatch loop against real Redis, with handlers that only record what they are given.

use async_trait::async_trait;
use chrono::Utc;
use domain::{CardId, Clock, SystemClock, TaskType};
use polling_queue::{Keys, PollingQueueManager, QueueSettings, SingletonLease};
use scheduler::{BoxError, PeriodicJob, PoolSizes, Scheduler, SchedulerSettings};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use task_handlers::{Outcome, Registry, TaskHandler};
use test_support::TestRedis;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy)]
enum Behaviour {
    /// Reschedule one hour out at once.
    Quick,
    /// Sleep, then reschedule.
    Slow(Duration),
    /// Panic on this card, reschedule the others.
    PanicOn(CardId),
    /// Never finish.
    Hang,
}

struct Recorder {
    task: TaskType,
    queue: PollingQueueManager,
    behaviour: Behaviour,
    seen: Mutex<HashMap<CardId, usize>>,
    running: AtomicUsize,
    max_running: AtomicUsize,
}

impl Recorder {
    fn new(task: TaskType, queue: PollingQueueManager, behaviour: Behaviour) -> Arc<Self> {
        Arc::new(Recorder {
            task,
            queue,
            behaviour,
            seen: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
            max_running: AtomicUsize::new(0),
        })
    }

    fn seen(&self) -> HashMap<CardId, usize> {
        self.seen.lock().expect("lock").clone()
    }
}

#[async_trait]
impl TaskHandler for Recorder {
    fn task_type(&self) -> TaskType {
        self.task
    }

    async fn handle(&self, card: CardId) -> Outcome {
        *self.seen.lock().expect("lock").entry(card).or_default() += 1;
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        match self.behaviour {
            Behaviour::Quick => {}
            Behaviour::Slow(d) => tokio::time::sleep(d).await,
            Behaviour::PanicOn(p) if p == card => panic!("handler bug on card {card}"),
            Behaviour::PanicOn(_) => {}
            Behaviour::Hang => std::future::pending::<()>().await,
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        let next = Utc::now() + chrono::Duration::hours(1);
        self.queue
            .reschedule(card, self.task, next)
            .await
            .expect("reschedule");
        Outcome::Success
    }
}

fn settings(pool: usize) -> SchedulerSettings {
    SchedulerSettings {
        tick: Duration::from_millis(50),
        batch: 1000,
        pools: PoolSizes([pool; 4]),
        retry_interval: Duration::from_secs(60),
        shutdown_grace: Duration::from_millis(300),
        backlog_every: Duration::from_secs(1),
    }
}

async fn world() -> anyhow::Result<(TestRedis, PollingQueueManager, SingletonLease)> {
    let redis = TestRedis::new().await?;
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
    Ok((redis, queue, SingletonLease::new(pool, keys)))
}

async fn seed_due(queue: &PollingQueueManager, task: TaskType, n: i64) -> anyhow::Result<()> {
    let now = Utc::now() - chrono::Duration::seconds(1);
    let entries: Vec<_> = (1..=n).map(|i| (CardId(i), now)).collect();
    queue.requeue_many(task, &entries).await?;
    Ok(())
}

async fn wait_until(mut cond: impl FnMut() -> bool, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

#[tokio::test]
async fn every_due_card_is_handled_once_and_rescheduled() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, TaskType::Carddata, 2_000).await?;
    let handler = Recorder::new(TaskType::Carddata, queue.clone(), Behaviour::Quick);
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(64),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(wait_until(|| handler.seen().len() == 2_000, Duration::from_secs(20)).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.cancel();
    let report = run.await?;
    assert!(report.drained);
    let seen = handler.seen();
    assert!(seen.values().all(|n| *n == 1), "no card handled twice");
    assert!(handler.max_running.load(Ordering::SeqCst) <= 64);
    assert_eq!(queue.get_due_backlog(TaskType::Carddata).await?, 0);
    assert_eq!(
        queue.get_total_queue_depth(TaskType::Carddata).await?,
        2_000
    );
    Ok(())
}

#[tokio::test]
async fn a_full_pool_dequeues_nothing() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, TaskType::Realname, 50).await?;
    let handler = Recorder::new(
        TaskType::Realname,
        queue.clone(),
        Behaviour::Slow(Duration::from_millis(400)),
    );
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(4),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Four in the pool; the other 46 are still due in Redis, not waiting in memory.
    assert_eq!(handler.seen().len(), 4);
    assert_eq!(queue.get_due_backlog(TaskType::Realname).await?, 46);
    stop.cancel();
    run.await?;
    assert!(handler.max_running.load(Ordering::SeqCst) <= 4);
    Ok(())
}

#[tokio::test]
async fn manual_triggers_come_first_and_keep_the_shard_score() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    // Card 7 is due in 25 minutes; a manual trigger must not wait for that.
    let later = Utc::now() + chrono::Duration::minutes(25);
    queue.requeue(CardId(7), TaskType::Carddata, later).await?;
    let before = queue.score_of(CardId(7), TaskType::Carddata).await?;
    queue.enqueue_manual(CardId(7), TaskType::Carddata).await?;
    let handler = Recorder::new(TaskType::Carddata, queue.clone(), Behaviour::Quick);
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(8),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(
        wait_until(
            || handler.seen().contains_key(&CardId(7)),
            Duration::from_millis(500)
        )
        .await
    );
    stop.cancel();
    run.await?;
    // The handler rescheduled it (1 h); nothing else touched the entry.
    let after = queue.score_of(CardId(7), TaskType::Carddata).await?;
    assert!(before.is_some() && after > before);
    Ok(())
}

#[tokio::test]
async fn a_panicking_handler_loses_no_card() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, TaskType::Package, 20).await?;
    let handler = Recorder::new(
        TaskType::Package,
        queue.clone(),
        Behaviour::PanicOn(CardId(5)),
    );
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(8),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(wait_until(|| handler.seen().len() == 20, Duration::from_secs(5)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.cancel();
    run.await?;
    // Card 5 is back at about now + retry interval (60 s), not lost, not leased for 300 s.
    let score = queue.score_of(CardId(5), TaskType::Package).await?.unwrap();
    let now = Utc::now().timestamp() as f64;
    assert!(
        score > now + 50.0 && score < now + 70.0,
        "score {score} vs now {now}"
    );
    Ok(())
}

#[tokio::test]
async fn shutdown_hands_unfinished_cards_back_due_now() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, TaskType::Protect, 6).await?;
    let handler = Recorder::new(TaskType::Protect, queue.clone(), Behaviour::Hang);
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(4),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(wait_until(|| handler.seen().len() == 4, Duration::from_secs(2)).await);
    stop.cancel();
    let report = tokio::time::timeout(Duration::from_secs(5), run).await??;
    assert!(!report.drained);
    assert_eq!(report.rescheduled, 4);
    // All six are due now: the four hung ones were handed back, the two others never left.
    assert_eq!(queue.get_due_backlog(TaskType::Protect).await?, 6);
    Ok(())
}

struct CountingJob(Arc<AtomicUsize>);

#[async_trait]
impl PeriodicJob for CountingJob {
    fn name(&self) -> &'static str {
        "test_job"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(60)
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test]
async fn a_periodic_job_runs_once_per_period_across_nodes() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    let runs = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    let mut nodes = Vec::new();
    for _ in 0..3 {
        let handler = Recorder::new(TaskType::Realname, queue.clone(), Behaviour::Quick);
        let sched = Scheduler::new(
            queue.clone(),
            Registry::new([handler as Arc<dyn TaskHandler>]),
            leases.clone(),
            Arc::new(SystemClock) as Arc<dyn Clock>,
            settings(2),
        )
        .with_job(Box::new(CountingJob(runs.clone())));
        nodes.push(tokio::spawn(sched.run(stop.clone())));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.cancel();
    for n in nodes {
        n.await?;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    Ok(())
}
