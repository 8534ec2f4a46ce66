//! Shared budgets: the cluster-wide concurrency slots per task type
//! ([`ConcurrencySemaphore`](semaphore::ConcurrencySemaphore)) and the gateway's calls per
//! second ([`RedisRateLimiter`](ratelimit::RedisRateLimiter)).

pub(crate) mod ratelimit;
pub(crate) mod semaphore;
