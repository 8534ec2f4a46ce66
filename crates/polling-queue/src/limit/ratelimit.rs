//! [`RedisRateLimiter`]: the gateway budget shared by every node, GCRA over Redis `TIME`.
//!
//! Commands ahead of queries: a query books the next free slot with no burst allowance (it
//! waits its turn, spaced at the rate); a stop or start may go as long as the bucket is booked
//! no further than the burst allowance ahead, so it passes the queries already booked instead
//! of queueing behind them. Over any window the bucket still grants at most the rate times the
//! window plus the burst (GCRA's bound, with the commands' tolerance the largest).

use crate::{Keys, RedisKey, scripts};
use domain::{CallClass, Cause, RateLimitError, RateLimiter};
use fred::clients::Pool;
use fred::types::Value;
use std::time::Duration;

/// A GCRA limiter on `polling:ratelimit:gateway:{bucket}`. N nodes together never exceed
/// `per_second` (plus the burst) because the state and the time both live in Redis.
#[derive(Debug, Clone)]
pub struct RedisRateLimiter {
    pool: Pool,
    keys: Keys,
    /// How much of the budget may be spent at once after an idle period.
    burst_window: Duration,
}

impl RedisRateLimiter {
    /// Default burst: 100 ms worth of budget (at least one call), for commands only.
    pub const DEFAULT_BURST_WINDOW: Duration = Duration::from_millis(100);

    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self {
            pool,
            keys,
            burst_window: Self::DEFAULT_BURST_WINDOW,
        }
    }

    /// Allows `window` worth of budget at once (e.g. 1 s at 50/s: 50 calls in a burst).
    pub fn with_burst_window(mut self, window: Duration) -> Self {
        self.burst_window = window;
        self
    }

    /// Commands allowed at once after an idle period at `per_second`.
    pub fn burst(&self, per_second: u32) -> u64 {
        ((self.burst_window.as_secs_f64() * f64::from(per_second)).floor() as u64).max(1)
    }

    fn key(&self, bucket: &str) -> String {
        self.keys.render(&RedisKey::RateLimit {
            bucket: bucket.to_owned(),
        })
    }
}

#[async_trait::async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn reserve(
        &self,
        bucket: &str,
        per_second: u32,
        class: CallClass,
        max_wait: Duration,
    ) -> Result<Option<Duration>, RateLimitError> {
        if per_second == 0 {
            return Ok(Some(Duration::ZERO));
        }
        let interval_us = 1_000_000 / i64::from(per_second);
        let tolerance_us = match class {
            CallClass::Query => 0,
            CallClass::Command => interval_us * (self.burst(per_second) as i64 - 1),
        };
        let max_wait_us = max_wait.as_micros().min(i64::MAX as u128) as i64;
        let key = self.key(bucket);
        let args = vec![
            Value::from(interval_us.max(1)),
            Value::from(tolerance_us),
            Value::from(max_wait_us),
        ];
        let wait_us: i64 = scripts::eval(&scripts::GCRA, &self.pool, key, args)
            .await
            .map_err(|e| RateLimitError(Cause::new(e)))?;
        Ok(u64::try_from(wait_us).ok().map(Duration::from_micros))
    }

    async fn booked(&self, bucket: &str) -> Result<Duration, RateLimitError> {
        let ahead_us: i64 =
            scripts::eval(&scripts::GCRA_BOOKED, &self.pool, self.key(bucket), vec![])
                .await
                .map_err(|e| RateLimitError(Cause::new(e)))?;
        Ok(Duration::from_micros(u64::try_from(ahead_us).unwrap_or(0)))
    }
}
