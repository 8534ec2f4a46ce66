//! Every way into a poll reaches the handler within two ticks: a card pushed on a manual list by
//! the API (which announces it) or by any other system (a bare `RPUSH`, no announcement), a card
//! made due whose wake message was lost (on an idle node: on a busy one it joins the backlog in
//! due order), a decisive pick come due; right after the node starts, while it idles and while
//! it is busy with a backlog that never ends. Each way is tried
//! [`RUNS`] times, at moments spread over the tick, and the slowest is asserted.

mod common;

use chrono::Utc;
use common::{Behaviour, Recorder, settings, wait_until};
use domain::{CardId, TaskType};
use fred::prelude::*;
use polling_queue::{Keys, PollingQueueManager, RedisKey, SingletonLease};
use scheduler::{Scheduler, ShutdownReport};
use std::sync::Arc;
use std::time::{Duration, Instant};
use task_handlers::{Registry, TaskHandler};
use test_support::TestRedis;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The node's tick; every way in must reach the handler within two of them.
const TICK: Duration = Duration::from_millis(250);
const BOUND: Duration = Duration::from_millis(2 * 250);
/// Tries of each way.
const RUNS: u64 = 50;
/// Cards of the backlog that never ends (ids 1..), and where the cards pushed start.
const BACKLOG: i64 = 2_000;
const PUSHED: i64 = 100_000;

/// A scheduler for carddata over `handler`, pool 16, tick [`TICK`].
struct Node {
    stop: CancellationToken,
    run: JoinHandle<ShutdownReport>,
}

impl Node {
    fn start(
        queue: &PollingQueueManager,
        leases: &SingletonLease,
        handler: &Arc<Recorder>,
    ) -> Node {
        let mut s = settings(16);
        s.tick = TICK;
        s.backlog_every = Duration::from_secs(10);
        let sched = Scheduler::new(
            queue.clone(),
            Registry::new([handler.clone() as Arc<dyn TaskHandler>]),
            leases.clone(),
            Arc::new(domain::SystemClock),
            s,
        );
        let stop = CancellationToken::new();
        let run = tokio::spawn(sched.run(stop.clone()));
        Node { stop, run }
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        self.run.await?;
        Ok(())
    }
}

/// How a card gets on the manual list, or is made due.
#[derive(Clone, Copy, Debug)]
enum Way {
    /// `enqueue_manual`: the API's trigger, `RPUSH` and the announcement in one round trip.
    Api,
    /// A bare `RPUSH polling:manual:carddata <id>`, as any other system may push.
    Raw,
    /// The card's entry made due now with its wake stamped in the ledger, but the message lost.
    LostWake,
}

struct World {
    redis: TestRedis,
    queue: PollingQueueManager,
    leases: SingletonLease,
    raw: fred::clients::Pool,
    keys: Keys,
}

async fn world() -> anyhow::Result<World> {
    let (redis, queue, leases) = common::world().await?;
    let raw = redis.pool().await?;
    let keys = Keys::new(redis.prefix.clone());
    // The cards to push, queued an hour out: only a way in brings them sooner.
    let later = Utc::now() + chrono::Duration::hours(1);
    let entries: Vec<_> = (PUSHED..PUSHED + 4 * RUNS as i64)
        .map(|i| (CardId(i), later))
        .collect();
    queue.requeue_many(TaskType::Carddata, &entries).await?;
    Ok(World {
        redis,
        queue,
        leases,
        raw,
        keys,
    })
}

impl World {
    async fn bring(&self, way: Way, card: CardId) -> anyhow::Result<()> {
        let task = TaskType::Carddata;
        match way {
            Way::Api => self.queue.enqueue_manual(card, task).await?,
            Way::Raw => {
                let key = self.keys.render(&RedisKey::Manual { task });
                let _: i64 = self.raw.rpush(key, card.get()).await?;
            }
            Way::LostWake => {
                // What a writer does, less the message: the entry due now, the ledger stamped.
                let shard = self.queue.shard_of(card);
                let now_secs = Utc::now().timestamp_millis() as f64 / 1000.0;
                let _: i64 = self
                    .raw
                    .zadd(
                        self.keys.shard_queue(shard, task),
                        None,
                        None,
                        false,
                        false,
                        (now_secs, card.get()),
                    )
                    .await?;
                let ledger = self.keys.render(&RedisKey::WakeLedger);
                let field = format!("{task}:{shard}");
                let _: i64 = self
                    .raw
                    .hset(ledger, (field, format!("test-{}", card.get())))
                    .await?;
            }
        }
        Ok(())
    }

    /// Brings `card` in by `way` and waits for its poll: how long from the push to the poll.
    async fn time_to_poll(
        &self,
        handler: &Recorder,
        way: Way,
        card: CardId,
    ) -> anyhow::Result<Duration> {
        let pushed = Instant::now();
        self.bring(way, card).await?;
        let polled = wait_until(|| handler.seen_at(card).is_some(), Duration::from_secs(40)).await;
        anyhow::ensure!(polled, "{way:?}: card {card} never polled");
        let at = handler.seen_at(card).expect("seen");
        Ok(at.duration_since(pushed))
    }

    /// [`RUNS`] tries of `way` on a running node, each at another moment of the tick; the
    /// slowest.
    async fn runs(&self, handler: &Recorder, way: Way, first: i64) -> anyhow::Result<Duration> {
        let mut slowest = Duration::ZERO;
        for i in 0..RUNS {
            // Spread the pushes over the tick's phases.
            tokio::time::sleep(TICK * (i % 10) as u32 / 10).await;
            let took = self
                .time_to_poll(handler, way, CardId(first + i as i64))
                .await?;
            slowest = slowest.max(took);
        }
        Ok(slowest)
    }
}

fn check(what: &str, slowest: Duration) {
    println!("{what}: slowest of {RUNS} {} ms", slowest.as_millis());
    assert!(
        slowest <= BOUND,
        "{what}: the slowest of {RUNS} runs took {} ms (two ticks: {} ms)",
        slowest.as_millis(),
        BOUND.as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_in_reaches_an_idle_node_within_two_ticks() -> anyhow::Result<()> {
    let w = world().await?;
    let handler = Recorder::new(TaskType::Carddata, w.queue.clone(), Behaviour::Quick);
    let node = Node::start(&w.queue, &w.leases, &handler);
    // Past the first round, which asks every list and shard anyway.
    tokio::time::sleep(2 * TICK).await;
    let mut first = PUSHED;
    for way in [Way::Api, Way::Raw, Way::LostWake] {
        let slowest = w.runs(&handler, way, first).await?;
        check(&format!("idle node, {way:?}"), slowest);
        first += RUNS as i64;
    }
    node.stop().await?;
    drop(w.redis);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_in_reaches_a_busy_node_within_two_ticks() -> anyhow::Result<()> {
    let w = world().await?;
    // A backlog that never ends: 2,000 cards due, each put back due now after a 20 ms poll.
    let due = Utc::now() - chrono::Duration::seconds(1);
    let backlog: Vec<_> = (1..=BACKLOG).map(|i| (CardId(i), due)).collect();
    w.queue.requeue_many(TaskType::Carddata, &backlog).await?;
    let handler = Recorder::new(
        TaskType::Carddata,
        w.queue.clone(),
        Behaviour::Endless(Duration::from_millis(20)),
    );
    let node = Node::start(&w.queue, &w.leases, &handler);
    assert!(
        wait_until(|| handler.seen().len() >= 100, Duration::from_secs(10)).await,
        "the backlog is being polled"
    );
    // Manual triggers jump the backlog. (A card merely made due joins the backlog in due
    // order, as it should: no lost-wake runs here.)
    let mut first = PUSHED;
    for way in [Way::Api, Way::Raw] {
        let slowest = w.runs(&handler, way, first).await?;
        check(&format!("busy node, {way:?}"), slowest);
        first += RUNS as i64;
    }
    // Decisive picks come due while the backlog is ahead of them: polled within two ticks of
    // their time, not in backlog order.
    let mut slowest = Duration::ZERO;
    for i in 0..RUNS as i64 {
        let card = CardId(first + i);
        let lead = Duration::from_millis(100 + 7 * (i as u64 % 40));
        let due_at = Instant::now() + lead;
        w.queue
            .reschedule_decisive(
                card,
                TaskType::Carddata,
                Utc::now() + chrono::Duration::from_std(lead)?,
            )
            .await?;
        assert!(
            wait_until(|| handler.seen_at(card).is_some(), Duration::from_secs(40),).await,
            "decisive pick {card} never polled"
        );
        let at = handler.seen_at(card).expect("seen");
        slowest = slowest.max(at.saturating_duration_since(due_at));
    }
    check("busy node, decisive pick from its due time", slowest);
    node.stop().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_pushed_right_after_a_node_starts_is_polled_within_two_ticks() -> anyhow::Result<()>
{
    let w = world().await?;
    let mut slowest = Duration::ZERO;
    // Each run starts a node and pushes at another moment of its first two ticks: before,
    // during and after the first round asked the list.
    for i in 0..RUNS as i64 {
        let handler = Recorder::new(TaskType::Carddata, w.queue.clone(), Behaviour::Quick);
        let node = Node::start(&w.queue, &w.leases, &handler);
        tokio::time::sleep(TICK * 2 * (i % 10) as u32 / 10).await;
        let way = if i % 2 == 0 { Way::Raw } else { Way::Api };
        let took = w.time_to_poll(&handler, way, CardId(PUSHED + i)).await?;
        slowest = slowest.max(took);
        node.stop().await?;
    }
    check("a node just started, raw and API pushes", slowest);
    Ok(())
}
