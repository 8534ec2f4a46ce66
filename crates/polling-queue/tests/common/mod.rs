//! Helpers shared by the integration tests. Each test owns its world through
//! [`TestRedis`]: a unique key prefix on the Redis at `CMP_TEST_REDIS_URL`, cleaned on drop.
#![allow(dead_code, unreachable_pub)]

use chrono::{DateTime, TimeZone, Utc};
use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand, Value};

pub use test_support::TestRedis;

/// The Redis server's time (`TIME`), in whole milliseconds: the clock every script decides
/// "due" and "lease ended" by. Tests whose queue decisions matter start their `ManualClock`
/// here, so the scores they write relate to the server's now.
pub async fn server_now(pool: &Pool) -> anyhow::Result<DateTime<Utc>> {
    let time = CustomCommand::new_static("TIME", ClusterHash::Random, false);
    let (secs, micros): (String, String) = pool.next().custom(time, Vec::<Value>::new()).await?;
    let millis = secs.parse::<i64>()? * 1000 + micros.parse::<i64>()? / 1000;
    DateTime::<Utc>::from_timestamp_millis(millis).ok_or_else(|| anyhow::anyhow!("TIME {secs}"))
}

/// Lets `secs` seconds pass for the entries of the sorted set `key`: every score moves that
/// much earlier. The scripts compare scores with the server's clock, which a test cannot move;
/// moving the scores instead is the same comparison (whole seconds keep a lease score
/// recognisable).
pub async fn age(pool: &Pool, key: &str, secs: f64) -> anyhow::Result<()> {
    let flat: Vec<(String, f64)> = pool.zrange(key, 0, -1, None, false, None, true).await?;
    if flat.is_empty() {
        return Ok(());
    }
    let moved: Vec<(f64, String)> = flat.into_iter().map(|(m, s)| (s - secs, m)).collect();
    load_zset(pool, key, moved).await
}

/// A fixed instant tests start their `ManualClock` at.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 2, 8, 0, 0)
        .single()
        .unwrap_or_default()
}

/// Loads `(score, member)` pairs into `key` with pipelined variadic ZADD, 1,000 a command.
pub async fn load_zset(
    pool: &Pool,
    key: &str,
    entries: impl IntoIterator<Item = (f64, String)>,
) -> anyhow::Result<()> {
    let entries: Vec<(f64, String)> = entries.into_iter().collect();
    for window in entries.chunks(100_000) {
        let pipe = pool.next().pipeline();
        for chunk in window.chunks(1_000) {
            let _: () = pipe
                .zadd(key, None, None, false, false, chunk.to_vec())
                .await?;
        }
        let _: Vec<Value> = pipe.all().await?;
    }
    Ok(())
}
