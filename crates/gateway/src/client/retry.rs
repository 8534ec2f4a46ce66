//! [`RetryPolicy`]: how `stop` and `start` retry.

use crate::GatewayError;
use rand::Rng;
use std::future::Future;
use std::time::Duration;

/// How `stop` and `start` retry. Queries never retry: their caller reschedules the card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included (3: one call and two retries).
    pub attempts: u32,
    /// Back-off before the first retry; doubles each time, with jitter.
    pub base_delay: Duration,
    /// Cap of the exponential back-off.
    pub max_delay: Duration,
    /// A `Retry-After` up to this is waited for; a longer one ends the retries at once (the
    /// carrier asks us to come back much later: the caller reschedules instead).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
            max_retry_after: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// Runs `attempt` up to `attempts` times: again after a retryable error, once the back-off
    /// (or the carrier's `Retry-After`, or a change lock's wait) has passed; `on_retry(error,
    /// try, delay)` is told before each wait. A wait the carrier asks for beyond
    /// `max_retry_after`, or a change lock without one, ends the tries at once: the caller
    /// decides again later.
    pub(crate) async fn run<T, F, Fut>(
        &self,
        attempts: u32,
        mut attempt: F,
        on_retry: impl Fn(&GatewayError, u32, Duration),
    ) -> Result<T, GatewayError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, GatewayError>>,
    {
        let mut tried = 1;
        loop {
            let err = match attempt().await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let Some(delay) = self.delay_after(tried, attempts, &err) else {
                return Err(err);
            };
            on_retry(&err, tried, delay);
            tokio::time::sleep(delay).await;
            tried += 1;
        }
    }

    /// The wait before another try after `err` on try `tried` of `attempts`; `None`: no more.
    fn delay_after(&self, tried: u32, attempts: u32, err: &GatewayError) -> Option<Duration> {
        if tried >= attempts || !err.is_retryable() {
            return None;
        }
        match err {
            GatewayError::Throttled {
                retry_after: Some(after),
            }
            | GatewayError::ChangeLocked {
                retry_after: Some(after),
                ..
            } => (*after <= self.max_retry_after).then_some(*after),
            GatewayError::ChangeLocked {
                retry_after: None, ..
            } => None,
            _ => Some(self.backoff(tried)),
        }
    }

    /// The back-off before retry number `retry` (1 = the first retry): `base * 2^(retry-1)`
    /// capped at `max_delay`, then a uniform draw in its upper half so that callers failed by
    /// the same incident do not come back in lockstep.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(
                1u32.checked_shl(retry.saturating_sub(1))
                    .unwrap_or(u32::MAX),
            )
            .min(self.max_delay);
        let ms = u64::try_from(exp.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rand::rng().random_range(ms / 2..=ms))
    }
}
