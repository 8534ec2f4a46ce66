//! Two clients sharing one Redis-held budget stay under it, as the simulator counts.

mod common;

use common::{config, register, sim};
use fred::prelude::*;
use gateway::{CarrierGateway, GatewayConfig, HttpGateway};
use polling_queue::{Keys, RedisKey, RedisRateLimiter};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_sharing_50_per_second_stay_under_it() {
    let pool = Builder::from_config(Config::from_url("redis://127.0.0.1:6379").unwrap())
        .build_pool(2)
        .unwrap();
    pool.init().await.expect("Redis at 127.0.0.1:6379");
    let prefix = format!(
        "test-gateway-{}-{}:",
        std::process::id(),
        rand::random::<u32>()
    );
    let keys = Keys::new(prefix);
    let limiter: Arc<dyn domain::RateLimiter> =
        Arc::new(RedisRateLimiter::new(pool.clone(), keys.clone()));

    let sim = sim().await;
    register(&sim, &["1"]);
    let cfg = GatewayConfig {
        rate_limit_per_sec: 50,
        rate_limit_bucket: "carrier-a".into(),
        ..config(&sim)
    };
    let clients = [
        HttpGateway::new(cfg.clone(), Some(limiter.clone())).unwrap(),
        HttpGateway::new(cfg, Some(limiter)).unwrap(),
    ];

    let until = Instant::now() + Duration::from_secs(3);
    let mut tasks = Vec::new();
    for gw in &clients {
        for _ in 0..8 {
            let gw = gw.clone();
            tasks.push(tokio::spawn(async move {
                let (mut ok, mut throttled) = (0u32, 0u32);
                while Instant::now() < until {
                    match gw.realname("1").await {
                        Ok(_) => ok += 1,
                        Err(gateway::GatewayError::Throttled { .. }) => throttled += 1,
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
                (ok, throttled)
            }));
        }
    }
    let mut ok = 0;
    for t in tasks {
        ok += t.await.unwrap().0;
    }

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
        .del(keys.render(&RedisKey::RateLimit {
            bucket: "carrier-a".into(),
        }))
        .await
        .unwrap();
}
