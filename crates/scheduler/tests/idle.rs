//! Waiting costs nothing: what an idle or throttled node sends to Redis, read from the server's
//! own `INFO stats` on a `redis-server` of the test's own; and that waiting never delays a card
//! a writer makes due.

mod common;

use chrono::Utc;
use common::{Behaviour, Recorder, queue_on, settings, wait_until};
use domain::{CardId, SystemClock, TaskType};
use polling_queue::{ConcurrencySemaphore, Keys, PollingQueueManager, SemaphoreSettings};
use scheduler::Scheduler;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use task_handlers::{Outcome, Registry, TaskHandler};
use test_support::PrivateRedis;
use tokio_util::sync::CancellationToken;

/// The goal: at most this many commands a second from a waiting node.
const GOAL_PER_SEC: f64 = 50.0;
/// How long the commands are counted.
const WINDOW: Duration = Duration::from_secs(3);

/// The worker's settings but for the pool size: tick 1 s, the due backlog gauge every 10 s.
fn worker_settings() -> scheduler::SchedulerSettings {
    let mut s = settings(64);
    s.tick = Duration::from_secs(1);
    s.backlog_every = Duration::from_secs(10);
    s
}

/// Commands a second the server ran over [`WINDOW`].
async fn commands_per_sec(server: &PrivateRedis) -> anyhow::Result<f64> {
    let before = server.commands_processed().await?;
    tokio::time::sleep(WINDOW).await;
    let after = server.commands_processed().await?;
    Ok((after - before) as f64 / WINDOW.as_secs_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_node_asks_redis_almost_nothing_and_still_polls_what_comes_due()
-> anyhow::Result<()> {
    let server = PrivateRedis::start().await?;
    let (queue, leases) = queue_on(&server.redis).await?;
    // 500 cards of every type, none due for an hour.
    let later = Utc::now() + chrono::Duration::hours(1);
    let entries: Vec<_> = (1..=500).map(|i| (CardId(i), later)).collect();
    let mut handlers = Vec::new();
    for task in TaskType::ALL {
        queue.requeue_many(task, &entries).await?;
        handlers.push(Recorder::new(task, queue.clone(), Behaviour::Quick));
    }
    let registry = Registry::new(handlers.iter().map(|h| h.clone() as Arc<dyn TaskHandler>));
    let worker_defaults = worker_settings();
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        worker_defaults,
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    // The first round asks every shard once; then the loops know nothing is due for an hour.
    // The count starts after it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = commands_per_sec(&server).await?;
    println!("idle node, 4 task types x 16 shards, tick 1 s: {idle:.1} Redis commands/s");
    assert!(
        idle <= GOAL_PER_SEC,
        "an idle node sent {idle:.1} commands/s (goal <= {GOAL_PER_SEC})"
    );

    // A card made due now (a lifecycle write) is polled within a tick, not at the horizon.
    let carddata = &handlers[TaskType::Carddata.index()];
    queue
        .requeue(CardId(7), TaskType::Carddata, Utc::now())
        .await?;
    assert!(
        wait_until(
            || carddata.seen().contains_key(&CardId(7)),
            Duration::from_secs(2)
        )
        .await,
        "a card written due now is polled at once"
    );
    // A manual trigger likewise.
    let realname = &handlers[TaskType::Realname.index()];
    queue.enqueue_manual(CardId(9), TaskType::Realname).await?;
    assert!(
        wait_until(
            || realname.seen().contains_key(&CardId(9)),
            Duration::from_secs(2)
        )
        .await,
        "a manual trigger is polled at once"
    );
    // A card due in 1.5 s: asked for when its shard said it would be due, not 30 s later.
    let package = &handlers[TaskType::Package.index()];
    let due = Utc::now() + chrono::Duration::milliseconds(1_500);
    queue.requeue(CardId(11), TaskType::Package, due).await?;
    assert!(
        wait_until(
            || package.seen().contains_key(&CardId(11)),
            Duration::from_secs(4)
        )
        .await,
        "a card due soon is polled when due"
    );
    let polled_at = Utc::now();
    // Due is judged by the Redis server's clock (queue scores follow it), which may run a few
    // milliseconds ahead of this process's: "not before it was due" allows that much.
    let skew = chrono::Duration::milliseconds(50);
    assert!(
        polled_at >= due - skew && polled_at <= due + chrono::Duration::milliseconds(600),
        "polled {} ms after it was due",
        (polled_at - due).num_milliseconds()
    );
    stop.cancel();
    run.await?;
    Ok(())
}

/// Takes the cluster-wide slot or puts the card back due now, as `PollingBase::run` does, and
/// holds it for a 200 ms carrier call.
struct SlotHandler {
    queue: PollingQueueManager,
    semaphore: ConcurrencySemaphore,
    polls: AtomicUsize,
}

#[async_trait::async_trait]
impl TaskHandler for SlotHandler {
    fn task_type(&self) -> TaskType {
        TaskType::Carddata
    }

    async fn handle(&self, card: CardId) -> Outcome {
        let now = Utc::now();
        match self.semaphore.acquire(TaskType::Carddata).await {
            Ok(Some(permit)) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let _ = self.semaphore.release(permit).await;
                self.polls.fetch_add(1, Ordering::SeqCst);
                let next = now + chrono::Duration::hours(1);
                let _ = self.queue.reschedule(card, TaskType::Carddata, next).await;
                Outcome::Success
            }
            _ => {
                let _ = self.queue.reschedule(card, TaskType::Carddata, now).await;
                Outcome::RequeuedFull
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_throttled_by_the_cluster_limit_waits_for_its_slot_without_asking()
-> anyhow::Result<()> {
    let server = PrivateRedis::start().await?;
    let (queue, leases) = queue_on(&server.redis).await?;
    let semaphore = ConcurrencySemaphore::new(
        server.redis.pool().await?,
        Keys::new(server.redis.prefix.clone()),
        SemaphoreSettings::uniform(64, Duration::from_secs(300)),
        Arc::new(SystemClock),
    );
    semaphore.set_max(TaskType::Carddata, 1).await?;
    let due = Utc::now() - chrono::Duration::seconds(1);
    let entries: Vec<_> = (1..=500).map(|i| (CardId(i), due)).collect();
    queue.requeue_many(TaskType::Carddata, &entries).await?;
    let handler = Arc::new(SlotHandler {
        queue: queue.clone(),
        semaphore: semaphore.clone(),
        polls: AtomicUsize::new(0),
    });
    let worker_defaults = worker_settings();
    let sched = Scheduler::new(
        queue.clone(),
        Registry::new([handler.clone() as Arc<dyn TaskHandler>]),
        leases,
        Arc::new(SystemClock),
        worker_defaults,
    )
    .with_semaphore(semaphore);
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(
        wait_until(
            || handler.polls.load(Ordering::SeqCst) >= 2,
            Duration::from_secs(5)
        )
        .await
    );
    let polls_before = handler.polls.load(Ordering::SeqCst);
    let rate = commands_per_sec(&server).await?;
    let polls = handler.polls.load(Ordering::SeqCst) - polls_before;
    let per_sec = polls as f64 / WINDOW.as_secs_f64();
    println!(
        "throttled node (limit 1, 200 ms carrier): {rate:.1} Redis commands/s for {per_sec:.1} polls/s \
         ({:.1} a poll, the handler's slot, release and reschedule included)",
        rate / per_sec.max(0.1)
    );
    assert!(
        per_sec >= 3.0,
        "polls go on at the limit's pace: {per_sec:.1}/s"
    );
    // Per poll the scheduler asks the slot count (3 commands: the script, TIME, ZCOUNT) and
    // dequeues (4); the handler takes its slot (5), returns it and reschedules (2): 14, not the
    // hundreds of a loop that asks every shard every tick.
    assert!(
        rate / per_sec <= 16.0,
        "{rate:.1} commands/s for {per_sec:.1} polls/s"
    );
    stop.cancel();
    run.await?;
    Ok(())
}
