//! Helpers shared by the integration tests. Each test owns its world through
//! [`TestRedis`]: a unique key prefix on the Redis at `CMP_TEST_REDIS_URL`, cleaned on drop.
#![allow(dead_code, unreachable_pub)]

use chrono::{DateTime, TimeZone, Utc};
use fred::prelude::*;
use fred::types::Value;

pub use test_support::TestRedis;

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
