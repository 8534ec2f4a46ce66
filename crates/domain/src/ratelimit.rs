use std::time::Duration;

/// Could not consult the shared budget (Redis down, script error).
#[derive(Debug, thiserror::Error)]
#[error("rate limiter unavailable: {0}")]
pub struct RateLimitError(#[source] pub crate::Cause);

/// Who is asking for a call: the budget serves commands ahead of queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallClass {
    /// A read (real-name, usage, packages): waits its turn, never takes the burst allowance.
    Query,
    /// A stop or start: may use the burst allowance the queries leave alone, so it never
    /// waits behind the queries already booked.
    Command,
}

/// A budget of calls per second shared by every process of the deployment (the carrier's quota
/// is per account, not per node). Implemented over Redis in `polling-queue` (GCRA); consumed by
/// the gateway client, which only knows this trait.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait RateLimiter: Send + Sync {
    /// Reserve one call against `bucket` at `per_second`.
    ///
    /// `Some(wait)`: a slot is reserved; the caller makes its call after `wait` (zero: now).
    /// `None`: the next free slot is further away than `max_wait`; nothing was reserved and the
    /// caller should report the call as throttled.
    async fn reserve(
        &self,
        bucket: &str,
        per_second: u32,
        class: CallClass,
        max_wait: Duration,
    ) -> Result<Option<Duration>, RateLimitError>;

    /// How far ahead `bucket` is booked: the wait a query reserving now would get (zero when
    /// idle). The dispatch loop dequeues no more than the budget lets run.
    async fn booked(&self, bucket: &str) -> Result<Duration, RateLimitError>;

    /// The carrier refused a call of `bucket` as over its limit (`retry_after`: the wait it
    /// asked for): slow the bucket down for every process. A limiter that cannot adapt ignores
    /// it.
    async fn throttled(
        &self,
        _bucket: &str,
        _retry_after: Option<Duration>,
    ) -> Result<(), RateLimitError> {
        Ok(())
    }
}
