//! [`RedisRateLimiter`]: the gateway budget shared by every node, GCRA over Redis `TIME`.

use crate::{Keys, RedisKey, scripts};
use domain::{RateLimitError, RateLimiter};
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
    /// Default burst: 100 ms worth of budget (at least one call).
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

    /// Calls allowed at once after an idle period at `per_second`.
    pub fn burst(&self, per_second: u32) -> u64 {
        ((self.burst_window.as_secs_f64() * f64::from(per_second)).floor() as u64).max(1)
    }
}

#[async_trait::async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn reserve(
        &self,
        bucket: &str,
        per_second: u32,
        max_wait: Duration,
    ) -> Result<Option<Duration>, RateLimitError> {
        if per_second == 0 {
            return Ok(Some(Duration::ZERO));
        }
        let interval_us = 1_000_000 / i64::from(per_second);
        let tolerance_us = interval_us * (self.burst(per_second) as i64 - 1);
        let max_wait_us = max_wait.as_micros().min(i64::MAX as u128) as i64;
        let key = self.keys.render(&RedisKey::RateLimit {
            bucket: bucket.to_owned(),
        });
        let args = vec![
            Value::from(interval_us.max(1)),
            Value::from(tolerance_us),
            Value::from(max_wait_us),
        ];
        let wait_us: i64 = scripts::eval(&scripts::GCRA, &self.pool, key, args)
            .await
            .map_err(|e| RateLimitError(e.to_string()))?;
        Ok(u64::try_from(wait_us).ok().map(Duration::from_micros))
    }
}
