//! [`RedisRateLimiter`]: the gateway budget shared by every node, GCRA over Redis `TIME`.
//!
//! Commands ahead of queries: a query books the next free slot with no burst allowance (it
//! waits its turn, spaced at the rate); a stop or start may go as long as the bucket is booked
//! no further than the burst allowance ahead, so it passes the queries already booked instead
//! of queueing behind them. Over any window the bucket still grants at most the rate times the
//! window plus the burst (GCRA's bound, with the commands' tolerance the largest).
//!
//! A margin under the configured rate: slots are spaced at [`RedisRateLimiter::MARGIN`] less than the rate, so
//! that calls reaching the platform up to about 10 ms early or late still never put one call
//! more than the rate into any second of its count (with spacing exactly `1/rate`, any jitter
//! does). And the carrier's word over ours: a refusal as over the limit
//! ([`RateLimiter::throttled`]) cuts the bucket's rate to `THROTTLE_CUT` of what is in force
//! (not below `THROTTLE_FLOOR` of the configured rate), pauses it for the carrier's
//! `Retry-After` (1 s when it sends none), and the rate grows back linearly over
//! `THROTTLE_RECOVERY` (associated constants of [`RedisRateLimiter`]). The cut state lives in the bucket's key beside its TAT, so every node
//! slows at once.

use crate::{Keys, RedisKey, scripts};
use domain::{CallClass, Cause, RateLimitError, RateLimiter};
use fred::clients::Pool;
use fred::types::Value;
use std::time::Duration;

const MARGIN: f64 = RedisRateLimiter::MARGIN;
const THROTTLE_CUT: f64 = RedisRateLimiter::THROTTLE_CUT;
const THROTTLE_FLOOR: f64 = RedisRateLimiter::THROTTLE_FLOOR;
const THROTTLE_RECOVERY: Duration = RedisRateLimiter::THROTTLE_RECOVERY;
/// Refusals within this long after a cut cut nothing more (the calls already under way were
/// refused for the same excess).
const THROTTLE_SETTLE: Duration = Duration::from_secs(1);
/// The pause after a refusal that named no wait.
const THROTTLE_PAUSE: Duration = Duration::from_secs(1);

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
    /// The share of the configured rate the bucket keeps unused (see the module's doc).
    pub const MARGIN: f64 = 0.02;
    /// What a carrier's refusal as over its limit multiplies the rate in force by.
    pub const THROTTLE_CUT: f64 = 0.7;
    /// The lowest share of the configured rate refusals cut it to.
    pub const THROTTLE_FLOOR: f64 = 0.1;
    /// How long a cut rate takes to grow back to the configured one.
    pub const THROTTLE_RECOVERY: Duration = Duration::from_secs(60);

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
        let interval_us = (1_000_000.0 / (f64::from(per_second) * (1.0 - MARGIN))) as i64;
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
            Value::from(micros(THROTTLE_RECOVERY)),
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

    async fn throttled(
        &self,
        bucket: &str,
        retry_after: Option<Duration>,
    ) -> Result<(), RateLimitError> {
        let pause = retry_after.unwrap_or(THROTTLE_PAUSE);
        let args = vec![
            Value::from(micros(pause)),
            Value::from(THROTTLE_CUT),
            Value::from(THROTTLE_FLOOR),
            Value::from(micros(THROTTLE_RECOVERY)),
            Value::from(micros(THROTTLE_SETTLE)),
        ];
        let share: i64 =
            scripts::eval(&scripts::GCRA_THROTTLED, &self.pool, self.key(bucket), args)
                .await
                .map_err(|e| RateLimitError(Cause::new(e)))?;
        tracing::debug!(
            bucket,
            share_per_mille = share,
            pause_ms = pause.as_millis() as u64,
            "carrier refused a call as over its limit; the shared budget slowed down"
        );
        Ok(())
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}
