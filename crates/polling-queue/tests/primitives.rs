//! The semaphore, card cache, protect keys, leases, card locks, counters and the rate limiter,
//! against a real Redis.

mod common;

use chrono::Duration as Span;
use common::{TestRedis, t0};
use domain::{
    CallClass, Card, CardCategory, CardId, CardIdentity, CarrierId, DeviceId, ManualClock,
    MonthCounters, NewCard, RateLimiter, TaskType,
};
use fred::prelude::*;
use polling_queue::{
    CardCache, CardLock, ConcurrencySemaphore, Keys, LeaseToken, ProtectKeys, ProtectState,
    RedisKey, RedisRateLimiter, SemaphoreSettings, SingletonLease, TaskCounters, TaskOutcome,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn setup() -> anyhow::Result<(TestRedis, Pool, Keys, ManualClock)> {
    let redis = TestRedis::new().await?;
    let pool = redis.pool().await?;
    let keys = Keys::new(redis.prefix.clone());
    Ok((redis, pool, keys, ManualClock::new(t0())))
}

fn card(id: i64) -> CardIdentity {
    Card {
        id: CardId(id),
        facts: NewCard {
            iccid: format!("8986{id:016}"),
            msisdn: Some("13800000000".into()),
            carrier_id: CarrierId(2),
            card_category: CardCategory::Industry,
            status: 1,
            real_name_status: domain::RealNameStatus::NotVerified,
            network_status: domain::NetworkStatus::Stopped,
            enable_polling: true,
            device_id: Some(DeviceId(9)),
        },
        stop_reason: Some(domain::StopReason::NoPackage),
        data_usage_mb: domain::Megabytes::new(12_345, 2),
        usage: MonthCounters::default(),
        created_at: t0(),
        updated_at: t0(),
        deleted_at: None,
    }
    .identity(None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_max_50_with_60_concurrent_acquirers_grants_exactly_50() -> anyhow::Result<()> {
    let (_redis, pool, keys, clock) = setup().await?;
    let sem = ConcurrencySemaphore::new(
        pool.clone(),
        keys.clone(),
        SemaphoreSettings::uniform(10, Duration::from_secs(300)),
        Arc::new(clock.clone()),
    );
    let task = TaskType::Carddata;
    assert_eq!(
        sem.max(task).await?,
        10,
        "default while the max key is absent"
    );
    sem.set_max(task, 50).await?;
    assert_eq!(sem.max(task).await?, 50);

    let attempts = (0..60).map(|_| {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(task).await })
    });
    let mut permits = Vec::new();
    let mut refused = 0;
    for a in futures::future::join_all(attempts).await {
        match a?? {
            Some(p) => permits.push(p),
            None => refused += 1,
        }
    }
    assert_eq!((permits.len(), refused), (50, 10));
    assert_eq!(sem.current(task).await?, 50);
    assert_eq!(
        sem.current(TaskType::Realname).await?,
        0,
        "types are independent"
    );

    // A release frees a slot for the next acquirer.
    let first = permits.pop();
    if let Some(p) = first {
        sem.release(p.clone()).await?;
        sem.release(p).await?; // twice is harmless
    }
    let again = sem.acquire(task).await?;
    assert!(again.is_some());
    assert!(sem.acquire(task).await?.is_none());

    // Every holder "vanishes" (crash: never releases). After the lease their slots come back,
    // by the server's clock only: a node whose clock runs 10 minutes ahead changes nothing.
    clock.advance(Span::seconds(600));
    assert!(sem.acquire(task).await?.is_none(), "leases still running");
    let holders = keys.render(&polling_queue::RedisKey::Concurrency { task });
    common::age(&pool, &holders, 290.0).await?;
    assert!(sem.acquire(task).await?.is_none(), "leases still running");
    common::age(&pool, &holders, 20.0).await?;
    assert_eq!(
        sem.current(task).await?,
        0,
        "expired holders are not counted"
    );
    let reclaimed = sem.acquire(task).await?;
    assert!(
        reclaimed.is_some(),
        "the vanished holders' slots were reclaimed"
    );
    assert_eq!(sem.current(task).await?, 1);

    sem.reset(task).await?;
    assert_eq!(sem.current(task).await?, 0);
    assert_eq!(sem.max(task).await?, 50, "reset keeps the max");
    Ok(())
}

#[tokio::test]
async fn semaphore_max_key_lowered_refuses_until_enough_release() -> anyhow::Result<()> {
    let (_redis, pool, keys, clock) = setup().await?;
    let sem = ConcurrencySemaphore::new(pool, keys, SemaphoreSettings::default(), Arc::new(clock));
    let task = TaskType::Protect;
    sem.set_max(task, 2).await?;
    let a = sem.acquire(task).await?;
    let b = sem.acquire(task).await?;
    sem.set_max(task, 1).await?;
    assert!(sem.acquire(task).await?.is_none());
    if let Some(a) = a {
        sem.release(a).await?;
    }
    assert!(sem.acquire(task).await?.is_none(), "still 1 holder = max");
    if let Some(b) = b {
        sem.release(b).await?;
    }
    assert!(sem.acquire(task).await?.is_some());
    Ok(())
}

#[tokio::test]
async fn card_cache_round_trips_and_slides_its_ttl_on_hit() -> anyhow::Result<()> {
    let (_redis, pool, keys, _) = setup().await?;
    let cache = CardCache::new(pool.clone(), keys.clone());
    let key = keys.render(&RedisKey::Card { card: CardId(5) });
    assert_eq!(cache.get(CardId(5)).await?, None, "miss");

    cache.set(&card(5)).await?;
    let ttl: i64 = pool.ttl(&key).await?;
    assert!((299..=300).contains(&ttl), "ttl {ttl}");

    // Time passes (simulated by shortening the TTL); a hit restarts it.
    let _: bool = pool.expire(&key, 10, None).await?;
    assert_eq!(cache.get(CardId(5)).await?, Some(card(5)));
    let ttl: i64 = pool.ttl(&key).await?;
    assert!((299..=300).contains(&ttl), "ttl after hit {ttl}");

    cache.invalidate(CardId(5)).await?;
    cache.invalidate(CardId(5)).await?;
    assert_eq!(cache.get(CardId(5)).await?, None);

    // A snapshot that no longer decodes is a miss, and is dropped.
    let _: () = pool.set(&key, "{not json", None, None, false).await?;
    assert_eq!(cache.get(CardId(5)).await?, None);
    let exists: i64 = pool.exists(&key).await?;
    assert_eq!(exists, 0);
    Ok(())
}

#[tokio::test]
async fn protect_keys_are_exclusive_and_expire_with_the_period() -> anyhow::Result<()> {
    let (_redis, pool, keys, _) = setup().await?;
    let protect = ProtectKeys::new(pool.clone(), keys.clone());
    let d = DeviceId(10);
    assert_eq!(protect.protect_state(d).await?, ProtectState::default());

    protect.set_stop(d, Duration::from_secs(3_600)).await?;
    assert_eq!(
        protect.protect_state(d).await?,
        ProtectState {
            stop: true,
            start: false
        }
    );
    let pttl: i64 = pool
        .pttl(keys.render(&RedisKey::ProtectStop { device: d }))
        .await?;
    assert!(pttl > 3_590_000 && pttl <= 3_600_000, "pttl {pttl}");

    protect.set_start(d, Duration::from_secs(60)).await?;
    assert_eq!(
        protect.protect_state(d).await?,
        ProtectState {
            stop: false,
            start: true
        }
    );
    protect.set_stop(d, Duration::from_secs(60)).await?;
    assert_eq!(
        protect.protect_state(d).await?,
        ProtectState {
            stop: true,
            start: false
        }
    );

    assert_eq!(
        protect.protect_state(DeviceId(11)).await?,
        ProtectState::default(),
        "per device"
    );
    protect.clear(d).await?;
    protect.clear(d).await?;
    assert_eq!(protect.protect_state(d).await?, ProtectState::default());
    Ok(())
}

#[tokio::test]
async fn singleton_lease_acquire_renew_release_by_token() -> anyhow::Result<()> {
    let (_redis, pool, keys, _) = setup().await?;
    let node_a = SingletonLease::new(pool.clone(), keys.clone());
    let node_b = SingletonLease::new(pool.clone(), keys.clone());
    let ttl = Duration::from_secs(30);

    let Some(a) = node_a.try_acquire("initializer", ttl).await? else {
        panic!("first acquirer gets the lease")
    };
    assert!(node_b.try_acquire("initializer", ttl).await?.is_none());
    assert!(
        node_b.try_acquire("package-check", ttl).await?.is_some(),
        "jobs are independent"
    );

    let key = keys.render(&RedisKey::Lease {
        job: "initializer".into(),
    });
    let _: bool = pool.pexpire(&key, 1_000, None).await?;
    assert!(node_a.renew(&a).await?);
    let pttl: i64 = pool.pttl(&key).await?;
    assert!(pttl > 29_000, "renew restarted the ttl: {pttl}");

    // Someone else's token neither renews nor releases it.
    let forged = LeaseToken {
        token: "not-the-token".into(),
        ..a.clone()
    };
    assert!(!node_b.renew(&forged).await?);
    assert!(!node_b.release(forged).await?);
    assert!(node_b.try_acquire("initializer", ttl).await?.is_none());

    assert!(node_a.release(a.clone()).await?);
    assert!(
        !node_a.renew(&a).await?,
        "a released lease cannot be renewed"
    );
    let Some(b) = node_b.try_acquire("initializer", ttl).await? else {
        panic!("free after release")
    };
    // A's stale token (its lease expired and B took it) must not release B's lease.
    assert!(!node_a.release(a).await?);
    assert!(node_a.try_acquire("initializer", ttl).await?.is_none());
    assert!(node_b.release(b).await?);
    Ok(())
}

#[tokio::test]
async fn card_lock_is_exclusive_and_unlocks_by_token_only() -> anyhow::Result<()> {
    let (_redis, pool, keys, _) = setup().await?;
    let locks = CardLock::new(pool.clone(), keys.clone());
    let ttl = Duration::from_secs(10);
    let Some(t) = locks.try_lock(CardId(100), ttl).await? else {
        panic!("free lock")
    };
    assert!(locks.try_lock(CardId(100), ttl).await?.is_none());
    assert!(
        locks.try_lock(CardId(101), ttl).await?.is_some(),
        "per card"
    );
    let key = keys.render(&RedisKey::CardLock { card: CardId(100) });
    let pttl: i64 = pool.pttl(&key).await?;
    assert!(pttl > 9_000 && pttl <= 10_000);

    assert!(
        !locks
            .unlock(CardId(100), polling_queue::CardLockToken("other".into()))
            .await?
    );
    assert!(locks.try_lock(CardId(100), ttl).await?.is_none());
    assert!(locks.unlock(CardId(100), t).await?);
    assert!(locks.try_lock(CardId(100), ttl).await?.is_some());
    Ok(())
}

#[tokio::test]
async fn task_counters_count_outcomes_durations_and_hours() -> anyhow::Result<()> {
    let (_redis, pool, keys, clock) = setup().await?;
    let counters = TaskCounters::new(pool, keys, Arc::new(clock.clone()));
    let task = TaskType::Carddata;
    for ms in [10, 20, 30] {
        counters
            .record(task, TaskOutcome::Success, Duration::from_millis(ms))
            .await?;
    }
    counters
        .record(task, TaskOutcome::Failure, Duration::from_millis(100))
        .await?;
    clock.advance(Span::hours(1));
    counters
        .record(task, TaskOutcome::RequeuedFull, Duration::ZERO)
        .await?;
    counters
        .record(task, TaskOutcome::RequeuedFull, Duration::from_millis(40))
        .await?;

    let s = counters.read(task).await?;
    assert_eq!(
        (s.success, s.failure, s.requeued_full, s.duration_ms_sum),
        (3, 1, 2, 200)
    );
    assert!((s.mean_duration_ms() - 200.0 / 6.0).abs() < 1e-9);
    assert_eq!(s.hourly.len(), 2);
    let h8 = s.hourly.get("2026040208").copied().unwrap_or_default();
    let h9 = s.hourly.get("2026040209").copied().unwrap_or_default();
    assert_eq!((h8.success, h8.failure, h8.requeued_full), (3, 1, 0));
    assert_eq!((h9.success, h9.failure, h9.requeued_full), (0, 0, 2));
    assert_eq!(counters.read(TaskType::Realname).await?, Default::default());

    counters.reset(task).await?;
    assert_eq!(counters.read(task).await?, Default::default());
    Ok(())
}

/// Fires `n` reservations evenly over `over`, alternating between `limiters`; how many were
/// granted, and the time from the first reservation to the last (a loaded machine stretches it).
async fn fire(
    limiters: &[RedisRateLimiter],
    n: u32,
    over: Duration,
    max_wait: Duration,
) -> anyhow::Result<(u32, Duration)> {
    let start = Instant::now();
    let mut granted = 0;
    for i in 0..n {
        let at = over.mul_f64(f64::from(i) / f64::from(n));
        tokio::time::sleep(at.saturating_sub(start.elapsed())).await;
        let limiter = &limiters[i as usize % limiters.len()];
        if limiter
            .reserve("carrier-1", 50, CallClass::Command, max_wait)
            .await?
            .is_some()
        {
            granted += 1;
        }
    }
    Ok((granted, start.elapsed()))
}

/// GCRA's bound over a window: the burst plus the rate times the window (+1 for the edge), and
/// at least three quarters of it when callers keep asking faster than the rate.
fn assert_about_budget(granted: u32, elapsed: Duration, burst: u64) {
    let budget = burst as f64 + 50.0 * elapsed.as_secs_f64();
    assert!(
        f64::from(granted) <= budget + 1.0,
        "granted {granted} in {elapsed:?}: over the budget {budget:.1}"
    );
    assert!(
        f64::from(granted) >= 0.75 * budget,
        "granted {granted} in {elapsed:?}: far under the budget {budget:.1}"
    );
}

// At 50/s with max_wait 0, 200 rapid reservations over ~1 s grant about 50 + burst.
#[tokio::test]
async fn gcra_at_50_per_second_grants_about_50_plus_burst_over_one_second() -> anyhow::Result<()> {
    let (_redis, pool, keys, _) = setup().await?;
    let limiter = RedisRateLimiter::new(pool, keys);
    let burst = limiter.burst(50);
    assert_eq!(burst, 5);
    let (granted, elapsed) = fire(
        std::slice::from_ref(&limiter),
        200,
        Duration::from_secs(1),
        Duration::ZERO,
    )
    .await?;
    // About 55 when the loop really takes 1 s; proportionally more when the machine is slow.
    assert_about_budget(granted, elapsed, burst);
    Ok(())
}

// Two nodes (two limiters, two pools) share one budget: together still about 50 + burst.
#[tokio::test]
async fn gcra_two_limiter_instances_share_the_budget() -> anyhow::Result<()> {
    let (redis, pool, keys, _) = setup().await?;
    let a = RedisRateLimiter::new(pool, keys.clone());
    let b = RedisRateLimiter::new(redis.pool().await?, keys);
    let burst = a.burst(50);
    let (granted, elapsed) = fire(&[a, b], 200, Duration::from_secs(1), Duration::ZERO).await?;
    // Together, not each: one budget of about 55 a second.
    assert_about_budget(granted, elapsed, burst);
    Ok(())
}

#[tokio::test]
async fn gcra_reserves_future_slots_within_max_wait_and_zero_means_unlimited() -> anyhow::Result<()>
{
    let (_redis, pool, keys, _) = setup().await?;
    let limiter = RedisRateLimiter::new(pool.clone(), keys.clone());
    // 1/s, burst 1: the first call goes now, the next ones a second apart (and the 2 % margin:
    // 1.02 s; slots are far apart so that a loaded machine cannot blur them).
    let mut waits = Vec::new();
    for _ in 0..4 {
        match limiter
            .reserve("slow", 1, CallClass::Query, Duration::from_millis(2_500))
            .await?
        {
            Some(w) => waits.push(w),
            None => break,
        }
    }
    assert_eq!(
        waits.len(),
        3,
        "0, ~1 s, ~2 s fit in 2.5 s; ~3 s does not: {waits:?}"
    );
    assert!(waits[0] < Duration::from_millis(50));
    assert!(waits[1] > Duration::from_millis(820) && waits[1] <= Duration::from_millis(1_021));
    assert!(waits[2] > Duration::from_millis(1_840) && waits[2] <= Duration::from_millis(2_041));

    // Unlimited: granted at once and Redis is not touched.
    for _ in 0..1_000 {
        assert_eq!(
            limiter
                .reserve("free", 0, CallClass::Query, Duration::ZERO)
                .await?,
            Some(Duration::ZERO)
        );
    }
    let exists: i64 = pool
        .exists(keys.render(&RedisKey::RateLimit {
            bucket: "free".into(),
        }))
        .await?;
    assert_eq!(exists, 0);
    Ok(())
}

// Commands ahead of queries: with queries booked 0.3 s ahead, a stop goes at once (the burst
// allowance is theirs alone), and the queries after it wait one slot longer.
#[tokio::test]
async fn gcra_commands_pass_the_queries_booked_ahead() -> anyhow::Result<()> {
    let (_redis, pool, keys, _) = setup().await?;
    // 10/s, burst window 0.5 s: commands may go while the bucket is booked <= 0.4 s ahead.
    let limiter = RedisRateLimiter::new(pool, keys).with_burst_window(Duration::from_millis(500));
    let wait = Duration::from_secs(5);
    let mut queries = Vec::new();
    for _ in 0..3 {
        queries.push(limiter.reserve("c", 10, CallClass::Query, wait).await?);
    }
    let ms = |d: Option<Duration>| d.map(|d| d.as_millis()).unwrap_or(u128::MAX);
    // Queries have no burst: 0, 102, 204 ms (10/s less the 2 % margin, less the few ms the
    // test itself takes).
    assert!(ms(queries[0]) < 20, "{queries:?}");
    assert!((60..=103).contains(&ms(queries[1])), "{queries:?}");
    assert!((160..=205).contains(&ms(queries[2])), "{queries:?}");
    let booked = limiter.booked("c").await?;
    assert!(booked > Duration::from_millis(250) && booked <= Duration::from_millis(307));

    let stop = limiter.reserve("c", 10, CallClass::Command, wait).await?;
    assert_eq!(
        stop,
        Some(Duration::ZERO),
        "the stop does not wait behind the queries"
    );
    let next = limiter.reserve("c", 10, CallClass::Query, wait).await?;
    assert!(
        (340..=409).contains(&ms(next)),
        "the next query waits its turn: {next:?}"
    );
    assert_eq!(limiter.booked("idle").await?, Duration::ZERO);
    Ok(())
}

// The carrier's word over ours: a refusal as over the limit pauses the bucket for the
// Retry-After and cuts its rate to 0.7 of itself for every limiter on it; a second refusal
// within a second cuts nothing more; a bucket written by an older node ("<tat>") is read.
#[tokio::test]
async fn gcra_a_refusal_pauses_and_slows_the_bucket_for_every_limiter() -> anyhow::Result<()> {
    let (_redis, pool, keys, _) = setup().await?;
    let limiter = RedisRateLimiter::new(pool.clone(), keys.clone());
    let other = RedisRateLimiter::new(pool.clone(), keys.clone());
    let wait = Duration::from_secs(5);
    let ms = |d: Option<Duration>| d.map(|d| d.as_millis()).unwrap_or(u128::MAX);
    // An older node's value: a bare TAT in the past, read as an idle bucket.
    let key = keys.render(&RedisKey::RateLimit { bucket: "t".into() });
    let _: () = pool.set(key.as_str(), "1000", None, None, false).await?;
    assert!(ms(limiter.reserve("t", 10, CallClass::Query, wait).await?) < 20);
    limiter
        .throttled("t", Some(Duration::from_millis(500)))
        .await?;
    other.throttled("t", None).await?; // within the second: no second cut
    // Paused about a second (the later pause wins), then slots 146 ms apart (10/s x 0.98 x 0.7).
    let first = ms(other.reserve("t", 10, CallClass::Query, wait).await?);
    let second = ms(limiter.reserve("t", 10, CallClass::Query, wait).await?);
    assert!((900..=1_000).contains(&first), "paused: {first} ms");
    assert!(
        (135..=150).contains(&(second - first)),
        "slowed to 0.7: {} ms apart",
        second - first
    );
    let raw: String = pool.get(key.as_str()).await?;
    assert_eq!(raw.split(' ').count(), 3, "{raw}");
    assert!(raw.split(' ').nth(1) == Some("0.7000"), "{raw}");
    Ok(())
}
