//! Clients sharing a Redis-held budget per carrier stay under it, as the simulator counts; two
//! carriers with different rates share nothing.

mod common;

use common::{config, register, sim};
use domain::CarrierId;
use fred::prelude::*;
use gateway::{CarrierGateway, GatewayConfig, HttpGateway};
use polling_queue::{Keys, RedisKey, RedisRateLimiter};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn redis() -> (Pool, Keys) {
    let url = std::env::var("CMP_TEST_REDIS_URL").unwrap_or("redis://127.0.0.1:6379".into());
    let pool = Builder::from_config(Config::from_url(&url).expect("redis url"))
        .build_pool(2)
        .expect("redis pool");
    pool.init().await.expect("Redis at CMP_TEST_REDIS_URL");
    let prefix = format!(
        "test-gateway-{}-{}:",
        std::process::id(),
        rand::random::<u32>()
    );
    (pool, Keys::new(prefix))
}

/// `callers` tasks per client calling `realname` for `carrier` until `until`; the calls that
/// got through.
fn hammer(
    clients: &[HttpGateway],
    carrier: CarrierId,
    callers: usize,
    until: Instant,
) -> Vec<tokio::task::JoinHandle<u32>> {
    let mut tasks = Vec::new();
    for gw in clients {
        for _ in 0..callers {
            let gw = gw.clone();
            tasks.push(tokio::spawn(async move {
                let mut ok = 0u32;
                while Instant::now() < until {
                    match gw.realname(carrier, "1").await {
                        Ok(_) => ok += 1,
                        Err(
                            gateway::GatewayError::Throttled { .. }
                            | gateway::GatewayError::RateLimited,
                        ) => {}
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
                ok
            }));
        }
    }
    tasks
}

async fn total(tasks: Vec<tokio::task::JoinHandle<u32>>) -> u32 {
    let mut ok = 0;
    for t in tasks {
        ok += t.await.expect("caller task");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_sharing_50_per_second_stay_under_it() {
    let (pool, keys) = redis().await;
    let limiter: Arc<dyn domain::RateLimiter> =
        Arc::new(RedisRateLimiter::new(pool.clone(), keys.clone()));

    let sim = sim().await;
    register(&sim, &["1"]);
    let cfg = GatewayConfig {
        rate_limit_per_sec: 50,
        ..config(&sim)
    };
    let clients = [
        HttpGateway::new(cfg.clone(), Some(limiter.clone())).unwrap(),
        HttpGateway::new(cfg, Some(limiter)).unwrap(),
    ];

    let until = Instant::now() + Duration::from_secs(3);
    let ok = total(hammer(&clients, CarrierId(1), 8, until)).await;

    let stats = sim.state().stats();
    let busy: Vec<u64> = stats
        .per_second
        .iter()
        .map(|s| s.requests)
        .filter(|n| *n > 0)
        .collect();
    assert!(busy.len() >= 3, "{busy:?}");
    // 50 per second plus the limiter's burst (100 ms worth: 5).
    assert!(busy.iter().all(|n| *n <= 56), "per-second counts {busy:?}");
    // 3 s at 50/s plus the burst, plus up to one reserved slot per caller (16) still waiting
    // at the deadline; the floor only guards against a limiter that refuses far too much.
    assert!(
        (100..=180).contains(&ok),
        "{ok} calls in 3 s at 50/s: {busy:?}"
    );
    assert_eq!(u64::from(ok), stats.requests);

    let _: i64 = pool
        .del(keys.render(&RedisKey::RateLimit { bucket: "1".into() }))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_carriers_with_their_own_rates_share_nothing() {
    let (pool, keys) = redis().await;
    let limiter: Arc<dyn domain::RateLimiter> =
        Arc::new(RedisRateLimiter::new(pool.clone(), keys.clone()));
    let sim = sim().await;
    register(&sim, &["1"]);
    // Carrier 1 has the default 20/s, carrier 2 an override of 60/s.
    let cfg = GatewayConfig {
        rate_limit_per_sec: 20,
        rate_limits: BTreeMap::from([(CarrierId(2), 60)]),
        ..config(&sim)
    };
    let clients = [
        HttpGateway::new(cfg.clone(), Some(limiter.clone())).unwrap(),
        HttpGateway::new(cfg, Some(limiter)).unwrap(),
    ];
    let until = Instant::now() + Duration::from_secs(3);
    let slow = hammer(&clients, CarrierId(1), 4, until);
    let fast = hammer(&clients, CarrierId(2), 4, until);
    let (slow, fast) = (total(slow).await, total(fast).await);

    // Each carrier gets its own rate: 3 s at 20/s and at 60/s, plus the burst and one slot
    // per caller (8) still waiting at the deadline. One shared bucket would give both together
    // at most one rate.
    assert!(
        (40..=80).contains(&slow),
        "carrier 1: {slow} calls in 3 s at 20/s"
    );
    assert!(
        (140..=200).contains(&fast),
        "carrier 2: {fast} calls in 3 s at 60/s"
    );
    let stats = sim.state().stats();
    assert_eq!(u64::from(slow + fast), stats.requests);
    let busy: Vec<u64> = stats
        .per_second
        .iter()
        .map(|s| s.requests)
        .filter(|n| *n > 0)
        .collect();
    // Together above either rate alone in a full second, never above the sum (+ bursts 2 + 6).
    assert!(busy.iter().all(|n| *n <= 88), "per-second counts {busy:?}");
    assert!(busy.iter().any(|n| *n > 60), "per-second counts {busy:?}");

    // One bucket per carrier: polling:ratelimit:gateway:{carrier_id}.
    for carrier in ["1", "2"] {
        let key = keys.render(&RedisKey::RateLimit {
            bucket: carrier.into(),
        });
        assert!(
            key.ends_with(&format!("polling:ratelimit:gateway:{carrier}")),
            "{key}"
        );
        let present: i64 = pool.exists(key.as_str()).await.unwrap();
        assert_eq!(present, 1, "{key}");
        let _: i64 = pool.del(key.as_str()).await.unwrap();
    }
    let default: i64 = pool
        .exists(keys.render(&RedisKey::RateLimit {
            bucket: "default".into(),
        }))
        .await
        .unwrap();
    assert_eq!(default, 0, "no shared default bucket");
}

/// Requests the sim received, and how many of them it refused as over its quota.
fn answered_and_refused(sim: &gateway_sim::SimHandle) -> (u64, u64) {
    let stats = sim.state().stats();
    let refused = stats.by_outcome.get("over_quota").copied().unwrap_or(0);
    (stats.requests, refused)
}

/// Two clients sharing a Redis budget of `budget` calls/s for carrier 1, against a sim that
/// takes `quota` a second.
async fn at_quota(
    quota: u64,
    budget: u32,
) -> (Pool, Keys, gateway_sim::SimHandle, [HttpGateway; 2]) {
    let (pool, keys) = redis().await;
    let limiter: Arc<dyn domain::RateLimiter> =
        Arc::new(RedisRateLimiter::new(pool.clone(), keys.clone()));
    let sim = sim().await;
    register(&sim, &["1"]);
    sim.state()
        .set_faults(gateway_sim::FaultsPatch {
            quota_per_sec: Some(quota),
            ..gateway_sim::FaultsPatch::default()
        })
        .expect("a valid quota");
    let cfg = GatewayConfig {
        rate_limit_per_sec: budget,
        ..config(&sim)
    };
    let clients = [
        HttpGateway::new(cfg.clone(), Some(limiter.clone())).expect("client"),
        HttpGateway::new(cfg, Some(limiter)).expect("client"),
    ];
    (pool, keys, sim, clients)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_equal_to_the_platforms_limit_is_refused_at_most_one_call_in_a_hundred() {
    let (pool, keys, sim, clients) = at_quota(20, 20).await;
    let until = Instant::now() + Duration::from_secs(6);
    let ok = total(hammer(&clients, CarrierId(1), 4, until)).await;
    let (answered, refused) = answered_and_refused(&sim);
    println!("budget = limit = 20/s: {answered} calls in 6 s, {refused} refused, {ok} ok");
    assert!(ok >= 90, "{ok} calls went through in 6 s at 20/s");
    assert!(
        refused * 100 <= answered,
        "{refused} of {answered} calls refused at a budget equal to the limit"
    );
    let _: i64 = pool
        .del(keys.render(&RedisKey::RateLimit { bucket: "1".into() }))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_stricter_than_the_budget_slows_the_budget_down_for_every_client() {
    // The platform takes 10 a second; the budget says 30.
    let (pool, keys, sim, clients) = at_quota(10, 30).await;
    let started = Instant::now();
    let callers = hammer(&clients, CarrierId(1), 4, started + Duration::from_secs(8));
    // The first refusals cut the rate; from the third second on it stays near the platform's.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (first, first_refused) = answered_and_refused(&sim);
    let ok = total(callers).await;
    let (all, all_refused) = answered_and_refused(&sim);
    let (later, later_refused) = (all - first, all_refused - first_refused);
    println!(
        "budget 30/s, platform 10/s: first 3 s {first} calls, {first_refused} refused; \
         next 5 s {later} calls, {later_refused} refused; {ok} ok"
    );
    // Without slowing down, two of every three calls would be refused; slowed down, a few
    // are, as the rate grows back and finds the platform's limit again (about one in ten).
    assert!(
        later_refused * 5 <= later,
        "{later_refused} of {later} calls refused after the first 3 s: the budget did not slow down"
    );
    assert!(
        ok >= 50,
        "{ok} calls went through in 8 s at the platform's 10/s"
    );
    let _: i64 = pool
        .del(keys.render(&RedisKey::RateLimit { bucket: "1".into() }))
        .await
        .unwrap();
}
