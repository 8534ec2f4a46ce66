//! One clock decides "due" and "lease ended": the Redis server's (invariant 9). Two nodes, one
//! whose clock runs 60 s ahead, share the queues and the concurrency semaphore.

mod common;

use chrono::Duration as Span;
use common::{TestRedis, server_now};
use domain::{CardId, Clock, ManualClock, TaskType};
use polling_queue::{
    ConcurrencySemaphore, Keys, PollingQueueManager, QueueSettings, RedisClock, SemaphoreSettings,
    to_score,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const T: TaskType = TaskType::Carddata;

struct Node {
    qm: PollingQueueManager,
    sem: ConcurrencySemaphore,
}

async fn node(redis: &TestRedis, clock: ManualClock) -> anyhow::Result<Node> {
    let keys = Keys::new(redis.prefix.clone());
    let pool = redis.pool().await?;
    let settings = QueueSettings {
        shard_count: 16,
        lease: Duration::from_secs(300),
    };
    let clock: Arc<dyn Clock> = Arc::new(clock);
    Ok(Node {
        qm: PollingQueueManager::new(pool.clone(), keys.clone(), settings, clock.clone()),
        sem: ConcurrencySemaphore::new(
            pool,
            keys,
            SemaphoreSettings::uniform(1, Duration::from_secs(300)),
            clock,
        ),
    })
}

// 40 cards fall due over the next 4 s by the server's clock. Node A's clock is right, node B's
// runs 60 s ahead. Both dequeue every shard as fast as they can: every card is taken once, none
// before its due time by the server's clock, and B never takes a card A leased.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_60_s_ahead_takes_no_card_early_and_steals_no_lease() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let pool = redis.pool().await?;
    let start = server_now(&pool).await?;
    let a = node(&redis, ManualClock::new(start)).await?;
    let b = node(&redis, ManualClock::new(start + Span::seconds(60))).await?;
    let due: BTreeMap<CardId, f64> = (0..40)
        .map(|i| {
            let at = start + Span::milliseconds(300 + 100 * i);
            (CardId(1_000 + i), to_score(at))
        })
        .collect();
    for (card, score) in &due {
        let at = start + Span::milliseconds(((score - to_score(start)) * 1000.0).round() as i64);
        a.qm.requeue(*card, T, at).await?;
    }

    // (card, node, server time right after the dequeue that returned it)
    let mut taken: Vec<(CardId, char, f64)> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while taken.len() < due.len() && std::time::Instant::now() < deadline {
        for (name, n) in [('A', &a), ('B', &b)] {
            for shard in 0..16 {
                let got = n.qm.dequeue_ready(shard, T, 100).await?;
                let after = to_score(server_now(&pool).await?) + 0.001;
                taken.extend(got.into_iter().map(|c| (c, name, after)));
            }
        }
    }
    let mut count = BTreeMap::<CardId, usize>::new();
    for (card, name, after) in &taken {
        *count.entry(*card).or_default() += 1;
        let score = due.get(card).copied().unwrap_or(f64::INFINITY);
        assert!(
            score <= *after,
            "card {card} taken by node {name} {:.3} s before its due time",
            score - after
        );
    }
    assert_eq!(count.len(), due.len(), "every card was taken");
    assert!(
        count.values().all(|n| *n == 1),
        "no card taken twice: {count:?}"
    );

    // Every card is leased now; B's clock says A's leases end in 240 s, the server says 300 s:
    // B neither dequeues nor claims any of them.
    for shard in 0..16 {
        assert!(b.qm.dequeue_ready(shard, T, 100).await?.is_empty());
    }
    let cards: Vec<CardId> = due.keys().copied().collect();
    assert_eq!(
        b.qm.claim(T, &cards).await?,
        vec![],
        "every card is in flight"
    );

    // The semaphore (max 1): A holds the slot; B's clock, 60 s ahead, does not expire it.
    let held = a.sem.acquire(T).await?;
    assert!(held.is_some());
    assert!(
        b.sem.acquire(T).await?.is_none(),
        "A's slot is not B's to expire"
    );
    assert_eq!(b.sem.room(T).await?, 0);
    assert_eq!(b.sem.current(T).await?, 1);
    Ok(())
}

// The worker's clock: the server's time read locally, monotonic, re-measured on demand.
#[tokio::test]
async fn the_redis_clock_follows_the_server_and_never_goes_back() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let pool = redis.pool().await?;
    let clock = RedisClock::start(pool.clone()).await;
    let mut last = clock.now();
    for _ in 0..20 {
        let before = server_now(&pool).await?;
        let now = clock.now();
        let after = server_now(&pool).await?;
        assert!(now >= last, "monotonic: {now} after {last}");
        assert!(
            now >= before - Span::milliseconds(250) && now <= after + Span::milliseconds(250),
            "{now} not within [{before}, {after}] (± 250 ms)"
        );
        let offset = clock.sync().await?;
        assert!(
            offset.abs() < Span::seconds(1),
            "same host, so the wall clock agrees: {offset}"
        );
        last = now;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}
