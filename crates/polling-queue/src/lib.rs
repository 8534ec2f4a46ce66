//! Every `polling:*` Redis key of the polling core, and the operations on them.
//!
//! This crate owns:
//! - the key layout ([`RedisKey`], rendered by [`Keys`] with the deployment prefix): no other
//!   crate spells a `polling:*` name;
//! - the sharded queues and manual lists ([`PollingQueueManager`]), with the lease-based dequeue;
//! - the cluster-wide concurrency semaphore ([`ConcurrencySemaphore`]);
//! - the card cache ([`CardCache`]), device protect periods ([`ProtectKeys`]), singleton leases
//!   ([`SingletonLease`]), per-card locks ([`CardLock`]), task counters ([`TaskCounters`]);
//! - the shared gateway budget ([`RedisRateLimiter`], implementing [`domain::RateLimiter`]);
//! - the carrier health board ([`CarrierHealthBoard`]), written by workers, read by the API;
//! - the Redis server's clock, read locally ([`RedisClock`], a [`domain::Clock`]).
//!
//! It must not touch PostgreSQL (no store, no sea-orm), the gateway or the scheduler: it is
//! Redis and nothing else, so the API process can use it without the worker's machinery.
//! Every Lua script touches exactly one key and no command names two, so the layout runs
//! unchanged on Redis Cluster (see [`keys`], "On Redis Cluster").
//!
//! Folders: `queue/` (the queues, their scores, the initializer's writes), `lock/` (card locks,
//! singleton leases), `limit/` (concurrency semaphore, rate limiter), `observation/` (counters,
//! depths, monitoring reads, carrier health); the other keys beside them at the top.

mod cache;
mod error;
pub mod keys;
mod limit;
mod lock;
mod observation;
mod protect;
mod pubsub;
mod queue;
mod scripts;
mod server_clock;

pub use cache::CardCache;
pub use error::QueueError;
/// The Redis connection pool every handle of this crate is built from; callers hold it as this
/// type so that no crate but this one names the Redis client.
pub use fred::clients::Pool;
pub use keys::{Keys, RedisKey};
pub use limit::ratelimit::RedisRateLimiter;
pub use limit::semaphore::{ConcurrencySemaphore, Permit, SemaphoreSettings};
pub use lock::card_lock::{CardLock, CardLockToken};
pub use lock::lease::{LeaseToken, SingletonLease};
pub use observation::carrier_budget::{BUDGET_TTL_SECS, CarrierBudgetBoard, CarrierCalls};
pub use observation::carrier_health::CarrierHealthBoard;
pub use observation::inspect::{ProtectTtl, QueueInspector};
pub use observation::monitor::{QueueSummary, SHARD_DEPTH_FAILED, ShardQueueStats};
pub use observation::recent::{
    DURATION_BUCKETS_MS, GatewayCounts, GatewayOutcome, MinuteCounts, RecentCounters, quantile_ms,
};
pub use observation::stats::{
    HOURLY_RETENTION, HourlyCounts, TaskCounters, TaskOutcome, TaskStats,
};
pub use protect::{ProtectKeys, ProtectState};
pub use pubsub::subscriber;
pub use queue::align::Aligned;
pub use queue::check::ScanStep;
pub use queue::init::{FirstEntries, InitWriter};
pub use queue::manager::{Dequeued, PollingQueueManager, QueueSettings};
pub use queue::probe::WakeProbe;
pub use queue::reconcile_progress::{ReconcileProgress, ReconcileState};
pub use queue::score::{is_lease_score, to_score};
pub use queue::wake::{WAKE_HORIZON, Wakes, Woken};
pub use server_clock::RedisClock;
