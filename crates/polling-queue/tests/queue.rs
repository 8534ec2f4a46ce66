//! The seed's scenarios for `PollingQueueManager` (seeds/000), against a real Redis.

mod common;

use anyhow::Context as _;
use chrono::{DateTime, Duration as Span, Utc};
use common::{TestRedis, age, load_zset, server_now, t0};
use domain::{
    Card, CardCategory, CardId, CardIdentity, CarrierId, ManualClock, MonthCounters, NewCard,
    TaskType,
};
use fred::prelude::*;
use polling_queue::{
    CardCache, Keys, PollingQueueManager, QueueError, QueueSettings, RedisKey, to_score,
};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

struct World {
    redis: TestRedis,
    pool: Pool,
    keys: Keys,
    clock: ManualClock,
    qm: PollingQueueManager,
}

async fn world() -> anyhow::Result<World> {
    let redis = TestRedis::new().await?;
    let pool = redis.pool().await?;
    let keys = Keys::new(redis.prefix.clone());
    let clock = ManualClock::new(server_now(&pool).await?);
    let qm = PollingQueueManager::new(
        pool.clone(),
        keys.clone(),
        QueueSettings::default(),
        Arc::new(clock.clone()),
    );
    Ok(World {
        redis,
        pool,
        keys,
        clock,
        qm,
    })
}

impl World {
    fn now(&self) -> DateTime<Utc> {
        domain::Clock::now(&self.clock)
    }

    fn key(&self, shard: u32, task: TaskType) -> String {
        self.keys.shard_queue(shard, task)
    }

    async fn members(&self, key: &str) -> anyhow::Result<BTreeMap<String, f64>> {
        let flat: Vec<(String, f64)> = self
            .pool
            .zrange(key, 0, -1, None, false, None, true)
            .await?;
        Ok(flat.into_iter().collect())
    }
}

/// Cards that all live on `shard` (of 16): `shard + 16 i`.
fn cards_on(shard: u32, n: usize) -> impl Iterator<Item = CardId> {
    (0..n as i64).map(move |i| CardId(i64::from(shard) + 16 * i))
}

fn card(id: i64) -> CardIdentity {
    Card {
        id: CardId(id),
        facts: NewCard {
            iccid: format!("8986{id:016}"),
            msisdn: None,
            carrier_id: CarrierId(1),
            card_category: CardCategory::Normal,
            status: 1,
            real_name_status: domain::RealNameStatus::Verified,
            network_status: domain::NetworkStatus::Online,
            enable_polling: true,
            device_id: None,
        },
        stop_reason: None,
        data_usage_mb: domain::Megabytes::ZERO,
        usage: MonthCounters::default(),
        created_at: t0(),
        updated_at: t0(),
        deleted_at: None,
    }
    .identity(None)
}

// 分片路由一致性: cardID=1000 -> polling:shard:8:queue:carddata, every time.
#[tokio::test]
async fn shard_routing_card_1000_goes_to_shard_8() -> anyhow::Result<()> {
    let w = world().await?;
    assert_eq!(
        Keys::new("").render(&RedisKey::ShardQueue {
            shard: 8,
            task: TaskType::Carddata
        }),
        "polling:shard:8:queue:carddata"
    );
    assert_eq!(w.qm.shard_of(CardId(1000)), 8);
    for minutes in [0, 5, 30] {
        let at = w.now() + Span::minutes(minutes);
        w.qm.requeue(CardId(1000), TaskType::Carddata, at).await?;
        let key = format!("{}polling:shard:8:queue:carddata", w.redis.prefix);
        let score: Option<f64> = w.pool.zscore(&key, "1000").await?;
        assert_eq!(score, Some(to_score(at)));
    }
    for shard in (0..16).filter(|s| *s != 8) {
        let n: u64 = w.pool.zcard(w.key(shard, TaskType::Carddata)).await?;
        assert_eq!(n, 0, "shard {shard} must stay empty");
    }
    Ok(())
}

// Worker 进程卡状态变化重新入队: Requeue(now) makes the card due on the next round.
#[tokio::test]
async fn requeue_at_now_is_dequeued_next_round() -> anyhow::Result<()> {
    let w = world().await?;
    w.qm.requeue(CardId(77), TaskType::Realname, w.now())
        .await?;
    let got =
        w.qm.dequeue_ready(w.qm.shard_of(CardId(77)), TaskType::Realname, 10)
            .await?;
    assert_eq!(got, vec![CardId(77)]);
    Ok(())
}

// 未到期卡不被提前取出: 100 due + 50 future, batch 200 -> exactly the 100.
#[tokio::test]
async fn dequeue_takes_only_the_100_due_cards_and_leaves_the_50_future() -> anyhow::Result<()> {
    let w = world().await?;
    let key = w.key(0, TaskType::Carddata);
    let now = to_score(w.now());
    let due: Vec<CardId> = cards_on(0, 100).collect();
    let future: Vec<CardId> = cards_on(0, 150).skip(100).collect();
    load_zset(
        &w.pool,
        &key,
        due.iter()
            .enumerate()
            .map(|(i, c)| (now - 1_000.0 + i as f64, c.to_string())),
    )
    .await?;
    load_zset(
        &w.pool,
        &key,
        future
            .iter()
            .enumerate()
            .map(|(i, c)| (now + 3_600.0 + i as f64, c.to_string())),
    )
    .await?;
    let before = w.members(&key).await?;

    let got = w.qm.dequeue_ready(0, TaskType::Carddata, 200).await?;

    assert_eq!(got, due, "exactly the due cards, oldest first");
    let after = w.members(&key).await?;
    assert_eq!(after.len(), 150, "dequeued cards stay queued (leased)");
    for c in &future {
        assert_eq!(
            after[&c.to_string()],
            before[&c.to_string()],
            "future card {c} untouched"
        );
    }
    for c in &due {
        assert!(after[&c.to_string()] >= now + 300.0, "due card {c} leased");
    }
    assert!(
        w.qm.dequeue_ready(0, TaskType::Carddata, 200)
            .await?
            .is_empty()
    );
    Ok(())
}

async fn concurrent_callers_are_disjoint(callers: usize) -> anyhow::Result<()> {
    let w = world().await?;
    let key = w.key(0, TaskType::Realname);
    let now = to_score(w.now());
    load_zset(
        &w.pool,
        &key,
        cards_on(0, 10_000).map(|c| (now - 60.0, c.to_string())),
    )
    .await?;

    let mut tasks = Vec::new();
    for _ in 0..callers {
        let qm = w.qm.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = qm.dequeue_ready(0, TaskType::Realname, 500).await?;
                if got.is_empty() {
                    return Ok::<_, QueueError>(mine);
                }
                mine.extend(got);
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut union = HashSet::new();
    let mut total = 0;
    for t in tasks {
        let mine = t.await??;
        total += mine.len();
        union.extend(mine);
    }
    assert_eq!(total, 10_000, "no card handed out twice");
    assert_eq!(
        union,
        cards_on(0, 10_000).collect::<HashSet<_>>(),
        "every card handed out"
    );
    Ok(())
}

// 高并发下不重复出队: 2 workers on one shard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_callers_get_disjoint_cards_covering_10000() -> anyhow::Result<()> {
    concurrent_callers_are_disjoint(2).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_callers_get_disjoint_cards_covering_10000() -> anyhow::Result<()> {
    concurrent_callers_are_disjoint(8).await
}

// Lua 脚本原子出队: each card taken once; with the lease it comes back by itself.
#[tokio::test]
async fn leased_card_is_invisible_until_the_lease_ends_then_due_again() -> anyhow::Result<()> {
    let w = world().await?;
    let c = CardId(3);
    w.qm.requeue(c, TaskType::Carddata, w.now() - Span::seconds(1))
        .await?;
    assert_eq!(
        w.qm.dequeue_ready(3, TaskType::Carddata, 1000).await?,
        vec![c]
    );

    // Time passes for the entry (the server's clock decides, see `common::age`): 290 s of the
    // 300 s lease, then 20 more.
    let key = w.key(3, TaskType::Carddata);
    age(&w.pool, &key, 290.0).await?;
    assert!(
        w.qm.dequeue_ready(3, TaskType::Carddata, 1000)
            .await?
            .is_empty(),
        "still leased"
    );

    age(&w.pool, &key, 20.0).await?;
    assert_eq!(
        w.qm.dequeue_ready(3, TaskType::Carddata, 1000).await?,
        vec![c],
        "the worker died: the card came due again without a requeue"
    );
    Ok(())
}

#[tokio::test]
async fn reschedule_does_not_resurrect_a_removed_card_but_requeue_does() -> anyhow::Result<()> {
    let w = world().await?;
    let c = CardId(42);
    let later = w.now() + Span::minutes(30);
    w.qm.requeue(c, TaskType::Package, w.now()).await?;
    w.qm.reschedule(c, TaskType::Package, later).await?;
    assert_eq!(
        w.qm.score_of(c, TaskType::Package).await?,
        Some(to_score(later))
    );

    w.qm.remove_from_all_queues(c).await?;
    w.qm.reschedule(c, TaskType::Package, later).await?;
    w.qm.reschedule_many(TaskType::Package, &[(c, later)])
        .await?;
    assert_eq!(
        w.qm.score_of(c, TaskType::Package).await?,
        None,
        "not resurrected"
    );

    w.qm.requeue(c, TaskType::Package, later).await?;
    assert_eq!(
        w.qm.score_of(c, TaskType::Package).await?,
        Some(to_score(later))
    );
    Ok(())
}

#[tokio::test]
async fn batch_variants_group_by_shard() -> anyhow::Result<()> {
    let w = world().await?;
    let at = w.now() + Span::seconds(10);
    let entries: Vec<(CardId, DateTime<Utc>)> = (0..2_500).map(|i| (CardId(i), at)).collect();
    w.qm.requeue_many(TaskType::Protect, &entries).await?;
    assert_eq!(w.qm.get_total_queue_depth(TaskType::Protect).await?, 2_500);
    for shard in 0..16 {
        assert!(w.qm.get_queue_depth(shard, TaskType::Protect).await? >= 156);
    }
    let later = at + Span::hours(1);
    let moved: Vec<(CardId, DateTime<Utc>)> = (2_000..3_000).map(|i| (CardId(i), later)).collect();
    w.qm.reschedule_many(TaskType::Protect, &moved).await?;
    assert_eq!(
        w.qm.get_total_queue_depth(TaskType::Protect).await?,
        2_500,
        "XX adds nothing"
    );
    assert_eq!(
        w.qm.score_of(CardId(2_100), TaskType::Protect).await?,
        Some(to_score(later))
    );
    assert_eq!(
        w.qm.score_of(CardId(1_999), TaskType::Protect).await?,
        Some(to_score(at))
    );

    let gone: Vec<CardId> = (0..1_500).map(CardId).collect();
    w.qm.remove_many_from_all_queues(&gone).await?;
    assert_eq!(w.qm.get_total_queue_depth(TaskType::Protect).await?, 1_000);
    Ok(())
}

// 删除卡后 protect 队列不残留: card 500 in all four types; all 64 keys free of it.
#[tokio::test]
async fn remove_from_all_queues_500_clears_all_64_keys_including_protect() -> anyhow::Result<()> {
    let w = world().await?;
    let c = CardId(500);
    let all = w.keys.all_shard_queues(16);
    assert_eq!(all.len(), 64);
    // Put it everywhere (as if an earlier shard count had routed it elsewhere), plus a neighbour.
    for key in &all {
        load_zset(
            &w.pool,
            key,
            [(1.0, "500".to_owned()), (1.0, "501".to_owned())],
        )
        .await?;
    }
    for task in TaskType::ALL {
        assert!(w.qm.score_of(c, task).await?.is_some());
    }

    w.qm.remove_from_all_queues(c).await?;

    for key in &all {
        let rank: Option<i64> = w.pool.zrank(key, "500", false).await?;
        assert_eq!(rank, None, "{key} still holds 500");
        let other: Option<f64> = w.pool.zscore(key, "501").await?;
        assert_eq!(other, Some(1.0), "{key} lost another card");
    }
    Ok(())
}

// 不存在的卡调用无副作用: card 999 never queued.
#[tokio::test]
async fn remove_from_all_queues_of_never_queued_card_999_is_ok() -> anyhow::Result<()> {
    let w = world().await?;
    w.qm.remove_from_all_queues(CardId(999)).await?;
    w.qm.remove_from_all_queues(CardId(999)).await?;
    for task in TaskType::ALL {
        assert_eq!(w.qm.get_total_queue_depth(task).await?, 0);
    }
    Ok(())
}

// 两个进程不产生重复清理 + API 进程处理卡删除不依赖 Scheduler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_on_card_deleted_both_ok_and_nothing_left() -> anyhow::Result<()> {
    let w = world().await?;
    let c = CardId(321);
    for task in TaskType::ALL {
        w.qm.requeue(c, task, w.now()).await?;
    }
    let cache = CardCache::new(w.pool.clone(), w.keys.clone());
    cache.set(&card(321)).await?;
    assert!(cache.get(c).await?.is_some());

    // The "API process" and the "worker process": two managers, two pools, no scheduler.
    let other_pool = w.redis.pool().await?;
    let api = PollingQueueManager::new(
        other_pool,
        w.keys.clone(),
        QueueSettings::default(),
        Arc::new(w.clock.clone()),
    );
    let worker = w.qm.clone();
    let (a, b) = tokio::join!(
        tokio::spawn(async move { api.on_card_deleted(c).await }),
        tokio::spawn(async move { worker.on_card_deleted(c).await }),
    );
    a.context("api task")??;
    b.context("worker task")??;

    for task in TaskType::ALL {
        assert_eq!(w.qm.score_of(c, task).await?, None);
    }
    assert!(cache.get(c).await?.is_none());
    let exists: i64 = w
        .pool
        .exists(w.keys.render(&RedisKey::Card { card: c }))
        .await?;
    assert_eq!(exists, 0);
    Ok(())
}

// 手动触发优先于定时队列 + 手动队列不影响分片定时队列: card 200, next check in 25 min.
#[tokio::test]
async fn manual_trigger_card_200_comes_out_first_and_keeps_its_shard_score() -> anyhow::Result<()> {
    let w = world().await?;
    let c = CardId(200);
    let scheduled = w.now() + Span::minutes(25);
    w.qm.requeue(c, TaskType::Carddata, scheduled).await?;
    w.qm.enqueue_manual(c, TaskType::Carddata).await?;
    let list: Vec<String> = w
        .pool
        .lrange(
            w.keys.render(&RedisKey::Manual {
                task: TaskType::Carddata,
            }),
            0,
            -1,
        )
        .await?;
    assert_eq!(list, vec!["200".to_owned()]);
    assert_eq!(w.qm.manual_len(TaskType::Carddata).await?, 1);

    // The scheduler's next tick: manual list first, the shard has nothing due.
    assert_eq!(w.qm.take_manual(TaskType::Carddata, 100).await?, vec![c]);
    assert!(
        w.qm.dequeue_ready(w.qm.shard_of(c), TaskType::Carddata, 100)
            .await?
            .is_empty()
    );
    assert_eq!(
        w.qm.score_of(c, TaskType::Carddata).await?,
        Some(to_score(scheduled)),
        "shard entry untouched"
    );
    assert!(w.qm.take_manual(TaskType::Carddata, 100).await?.is_empty());

    // Several cards come out in push order, at most n at a time.
    for id in [1, 2, 3] {
        w.qm.enqueue_manual(CardId(id), TaskType::Realname).await?;
    }
    assert_eq!(
        w.qm.take_manual(TaskType::Realname, 2).await?,
        vec![CardId(1), CardId(2)]
    );
    assert_eq!(
        w.qm.take_manual(TaskType::Realname, 2).await?,
        vec![CardId(3)]
    );
    Ok(())
}

// 背压跳过深度超限的分片: shard 5 of carddata holds 600,000 -> GetQueueDepth returns 600000.
#[tokio::test]
async fn queue_depth_of_shard_5_holding_600000_is_600000() -> anyhow::Result<()> {
    let w = world().await?;
    let future = to_score(w.now()) + 3_600.0;
    load_zset(
        &w.pool,
        &w.key(5, TaskType::Carddata),
        cards_on(5, 600_000).map(|c| (future, c.to_string())),
    )
    .await?;
    assert_eq!(w.qm.get_queue_depth(5, TaskType::Carddata).await?, 600_000);
    assert_eq!(w.qm.get_queue_depth(4, TaskType::Carddata).await?, 0);
    Ok(())
}

// MonitoringService 读取分片后的队列深度: 100, 200, ... 1600 -> 13600.
#[tokio::test]
#[tracing_test::traced_test]
async fn total_depth_is_13600_and_a_broken_shard_is_skipped_with_a_warning() -> anyhow::Result<()> {
    let w = world().await?;
    let now = to_score(w.now());
    for shard in 0..16u32 {
        let n = 100 * (shard as usize + 1);
        load_zset(
            &w.pool,
            &w.key(shard, TaskType::Carddata),
            cards_on(shard, n).map(|c| (now + 10.0, c.to_string())),
        )
        .await?;
    }
    assert_eq!(
        w.qm.get_total_queue_depth(TaskType::Carddata).await?,
        13_600
    );
    assert!(!logs_contain("队列深度查询失败"));

    // 部分分片 ZCard 失败不影响总体: shard 3 (400 entries) answers WRONGTYPE.
    let _: i64 = w.pool.del(w.key(3, TaskType::Carddata)).await?;
    let _: () = w
        .pool
        .set(
            w.key(3, TaskType::Carddata),
            "not a zset",
            None,
            None,
            false,
        )
        .await?;
    assert_eq!(
        w.qm.get_total_queue_depth(TaskType::Carddata).await?,
        13_600 - 400
    );
    assert!(logs_contain("分片 3 队列深度查询失败"));
    assert!(logs_contain("shard queue depth query failed"));
    assert!(logs_contain("shard=3"));
    assert!(logs_contain("task=carddata"));
    Ok(())
}

#[tokio::test]
async fn due_backlog_counts_only_due_entries_over_all_shards() -> anyhow::Result<()> {
    let w = world().await?;
    let now = w.now();
    let due: Vec<(CardId, DateTime<Utc>)> = (0..300)
        .map(|i| (CardId(i), now - Span::seconds(i)))
        .collect();
    let later: Vec<(CardId, DateTime<Utc>)> = (300..500)
        .map(|i| (CardId(i), now + Span::seconds(1)))
        .collect();
    w.qm.requeue_many(TaskType::Realname, &due).await?;
    w.qm.requeue_many(TaskType::Realname, &later).await?;
    assert_eq!(w.qm.get_due_backlog(TaskType::Realname).await?, 300);
    w.clock.advance(Span::seconds(1));
    assert_eq!(w.qm.get_due_backlog(TaskType::Realname).await?, 500);
    Ok(())
}

// Batches above Lua's unpack limit: 6,000 in one call.
#[tokio::test]
async fn dequeue_batch_of_6000_works_and_leases_with_increasing_scores() -> anyhow::Result<()> {
    let w = world().await?;
    let key = w.key(0, TaskType::Carddata);
    let now = to_score(w.now());
    load_zset(
        &w.pool,
        &key,
        cards_on(0, 7_000)
            .enumerate()
            .map(|(i, c)| (now - 7_000.0 + i as f64, c.to_string())),
    )
    .await?;

    let got = w.qm.dequeue_ready(0, TaskType::Carddata, 6_000).await?;
    assert_eq!(
        got,
        cards_on(0, 6_000).collect::<Vec<_>>(),
        "the 6,000 oldest, oldest first"
    );
    let scores = w.members(&key).await?;
    let leased: Vec<f64> = got.iter().map(|c| scores[&c.to_string()]).collect();
    assert!(leased[0] >= now + 300.0);
    assert!(
        leased.windows(2).all(|p| p[0] < p[1]),
        "strictly increasing lease scores"
    );
    let after = to_score(server_now(&w.pool).await?);
    assert!(leased[5_999] < after + 300.1);

    let rest = w.qm.dequeue_ready(0, TaskType::Carddata, 6_000).await?;
    assert_eq!(rest, cards_on(0, 7_000).skip(6_000).collect::<Vec<_>>());
    Ok(())
}

#[tokio::test]
async fn zero_batch_and_empty_inputs_do_nothing() -> anyhow::Result<()> {
    let w = world().await?;
    w.qm.requeue(CardId(1), TaskType::Carddata, w.now()).await?;
    assert!(
        w.qm.dequeue_ready(1, TaskType::Carddata, 0)
            .await?
            .is_empty()
    );
    assert!(w.qm.take_manual(TaskType::Carddata, 0).await?.is_empty());
    w.qm.requeue_many(TaskType::Carddata, &[]).await?;
    w.qm.remove_many_from_all_queues(&[]).await?;
    assert_eq!(
        w.qm.score_of(CardId(1), TaskType::Carddata).await?,
        Some(to_score(w.now()))
    );
    Ok(())
}

/// A reference model of one task type's queues: shard -> member -> score.
#[derive(Default)]
struct Model(BTreeMap<u32, BTreeMap<String, f64>>);

impl Model {
    /// The due members of `shard` at `now`, oldest first, at most `batch`.
    fn due(&self, shard: u32, batch: usize, now: f64) -> Vec<String> {
        let mut due: Vec<(f64, String)> = self
            .0
            .get(&shard)
            .into_iter()
            .flatten()
            .filter(|(_, s)| **s <= now)
            .map(|(m, s)| (*s, m.clone()))
            .collect();
        // Redis orders by score, then member bytes.
        due.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        due.truncate(batch);
        due.into_iter().map(|(_, m)| m).collect()
    }

    fn lease(&mut self, shard: u32, members: &[String], deadline: f64) {
        let q = self.0.entry(shard).or_default();
        for (i, m) in members.iter().enumerate() {
            q.insert(m.clone(), lease_score(deadline, i));
        }
    }

    fn age(&mut self, secs: f64) {
        for s in self.0.values_mut().flat_map(BTreeMap::values_mut) {
            *s -= secs;
        }
    }
}

// Random interleavings of dequeue / requeue / reschedule / remove never lose or duplicate a card.
// The scripts decide "due" by the server's clock, which moves while the test runs; every time
// the test writes is a multiple of 100 s from its start and every passage of time is a
// multiple of 100 s (`age`), and the model's now is the start + 50 s, so the model and the
// server agree on what is due as long as the test runs for less than 50 s.
#[tokio::test]
async fn random_interleavings_match_the_model() -> anyhow::Result<()> {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    let w = world().await?;
    let task = TaskType::Carddata;
    let started = std::time::Instant::now();
    let model_now = to_score(w.now()) + 50.0;
    for seed in [1_u64, 7, 2026] {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut model = Model::default();
        w.qm.remove_many_from_all_queues(&(0..64).map(CardId).collect::<Vec<_>>())
            .await?;
        for step in 0..400 {
            let c = CardId(rng.random_range(0..64));
            let shard = w.qm.shard_of(c);
            let at = w.now() + Span::seconds(100 * rng.random_range(-3..3));
            match rng.random_range(0..10) {
                0..=2 => {
                    w.qm.requeue(c, task, at).await?;
                    model
                        .0
                        .entry(shard)
                        .or_default()
                        .insert(c.to_string(), to_score(at));
                }
                3 | 4 => {
                    w.qm.reschedule(c, task, at).await?;
                    if let Some(s) = model.0.entry(shard).or_default().get_mut(&c.to_string()) {
                        *s = to_score(at);
                    }
                }
                5 => {
                    w.qm.remove_from_all_queues(c).await?;
                    model.0.entry(shard).or_default().remove(&c.to_string());
                }
                6 => {
                    let secs = 100.0 * f64::from(rng.random_range(1..4));
                    age_all(&w, task, secs).await?;
                    model.age(secs);
                }
                _ => {
                    let s = rng.random_range(0..16);
                    let batch = rng.random_range(1..6);
                    let got = w.qm.dequeue_ready(s, task, batch).await?;
                    let want = model.due(s, batch, model_now);
                    let got_members: Vec<String> = got.iter().map(CardId::to_string).collect();
                    assert_eq!(
                        got_members, want,
                        "seed {seed} step {step}: dequeue of shard {s}"
                    );
                    // The deadline is the server's now + lease: read it back from the first.
                    if let Some(first) = got.first() {
                        let leased = w.qm.score_of(*first, task).await?.unwrap_or_default();
                        // A whole millisecond (dequeue.lua): the lease score's
                        // sub-millisecond digits dropped.
                        model.lease(s, &want, (leased * 1000.0).floor() / 1000.0);
                    }
                }
            }
            for s in [shard, 0] {
                let actual = w.members(&w.key(s, task)).await?;
                let expected = model.0.get(&s).cloned().unwrap_or_default();
                assert_eq!(
                    actual, expected,
                    "seed {seed} step {step}: shard {s} diverged"
                );
            }
        }
        // Every queued card is handed out exactly once over a full lease cycle.
        age_all(&w, task, 10_000.0).await?;
        let mut seen = Vec::new();
        for s in 0..16 {
            seen.extend(w.qm.dequeue_ready(s, task, 1_000).await?);
            assert!(w.qm.dequeue_ready(s, task, 1_000).await?.is_empty());
        }
        let queued: usize = model.0.values().map(BTreeMap::len).sum();
        let unique: HashSet<_> = seen.iter().collect();
        assert_eq!((seen.len(), unique.len()), (queued, queued), "seed {seed}");
        w.qm.remove_many_from_all_queues(&(0..64).map(CardId).collect::<Vec<_>>())
            .await?;
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "the model's now holds for 50 s only"
    );
    Ok(())
}

/// `age` on every shard of `task`.
async fn age_all(w: &World, task: TaskType, secs: f64) -> anyhow::Result<()> {
    for s in 0..16 {
        age(&w.pool, &w.key(s, task), secs).await?;
    }
    Ok(())
}

/// The lease score of the `i`-th member of a dequeue (see `lua/dequeue.lua`): the script
/// writes it as decimal text, "<seconds>.<milliseconds><500 + i % 500>", which Redis parses.
fn lease_score(deadline: f64, i: usize) -> f64 {
    let ms = (deadline * 1000.0).round() as i64 + (i / 500) as i64;
    format!("{}.{:03}{}", ms / 1000, ms % 1000, 500 + i % 500)
        .parse()
        .unwrap_or(f64::NAN)
}
