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

mod align;
mod bulk_resp;
mod cache;
mod card_lock;
mod carrier_health;
mod check;
mod depth;
mod error;
mod init;
mod inspect;
pub mod keys;
mod lease;
mod manual;
mod manual_remove;
mod monitor;
mod protect;
mod queue_manager;
mod ratelimit;
mod recent;
mod reconcile_progress;
mod remove;
mod reschedule;
mod score;
mod scripts;
mod semaphore;
mod server_clock;
mod stats;
mod token_lock;

pub use align::Aligned;
pub use cache::CardCache;
pub use card_lock::{CardLock, CardLockToken};
pub use carrier_health::CarrierHealthBoard;
pub use check::ScanStep;
pub use error::QueueError;
pub use init::{FirstEntries, InitWriter};
pub use inspect::{ProtectTtl, QueueInspector};
pub use keys::{Keys, RedisKey};
pub use lease::{LeaseToken, SingletonLease};
pub use monitor::{QueueSummary, SHARD_DEPTH_FAILED, ShardQueueStats};
pub use protect::{ProtectKeys, ProtectState};
pub use queue_manager::{PollingQueueManager, QueueSettings};
pub use ratelimit::RedisRateLimiter;
pub use recent::{
    DURATION_BUCKETS_MS, GatewayCounts, GatewayOutcome, MinuteCounts, RecentCounters, quantile_ms,
};
pub use reconcile_progress::{ReconcileProgress, ReconcileState};
pub use score::{is_lease_score, to_score};
pub use semaphore::{ConcurrencySemaphore, Permit, SemaphoreSettings};
pub use server_clock::RedisClock;
pub use stats::{HOURLY_RETENTION, HourlyCounts, TaskCounters, TaskOutcome, TaskStats};
