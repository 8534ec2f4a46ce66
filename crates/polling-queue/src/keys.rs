//! Every Redis key and channel of the polling core (`docs/contract.md`, "Redis keys"), typed.
//!
//! A key is described by a [`RedisKey`] and turned into its wire name by [`Keys::render`], the
//! only place in the workspace where a `polling:*` name is spelled out. [`Keys`] carries the
//! deployment prefix: empty in production, unique per test so that tests sharing one Redis
//! never see each other's keys.
//!
//! # On Redis Cluster
//!
//! The layout runs unchanged on a cluster (`CMP_REDIS_URL=redis-cluster://…`): no command of
//! this crate names two keys, so none can fail with `CROSSSLOT`. Checked by `just
//! test-cluster`, which runs the Redis-touching suites on a three-master cluster and fails on
//! any `CROSSSLOT` in their output or in the nodes' `INFO errorstats`. Per kind of operation:
//!
//! - **Lua scripts** (dequeue, claim, semaphore, compare-and-delete/-pexpire, GCRA) take exactly
//!   one key, `KEYS[1]`, and build no key inside; `scripts::eval` accepts a single key.
//! - **MULTI/EXEC** is used only to replace one hash ([`RedisKey::InitProgress`],
//!   [`RedisKey::ReconcileProgress`], [`RedisKey::Configs`]: `DEL` + `HSET` (+ `EXPIRE`) of the
//!   same key), so a transaction never leaves its key's slot.
//! - **The carrier health board** ([`RedisKey::CarrierHealth`]) is one hash: `HSET` + `EXPIRE`
//!   of that key in a pipeline, `HGETALL` / `HGET` to read.
//! - **Operations over many keys are pipelines of one-key commands**, which fred routes to the
//!   node of each key: adding or removing a card in the four queues, `requeue_many` over shards,
//!   cache invalidation of many cards, setting one protect key and deleting the other, queue
//!   depths and inspections (`ZCARD`/`ZSCORE`/`EXISTS` one key each), the initializer's bulk
//!   `ZADD NX`. They were never atomic across keys and need not be: each key's write is
//!   idempotent and the checker repairs what a crash between two of them leaves.
//! - **No hash tags, on purpose** (one exception, below). Tagging the keys (e.g. `{polling}`) would pin every key to
//!   one slot, hence one node: the cluster would hold and serve nothing more than one Redis.
//!   Untagged, the 64 shard queues spread over the masters by CRC16, which is the point.
//!   Nothing needs two keys in one slot: a card's four queues are never written atomically
//!   together. For the same reason a deployment prefix must not contain `{…}` (it would become
//!   the hash tag of every key); `ops::connect_redis` warns when it does on a cluster.
//!   The exception is [`RedisKey::InitCanary`]: its tag is chosen to pin it to the slot of
//!   one shard queue, so that it is lost exactly when that queue's node loses its data.
//! - **Pub/sub** ([`RedisKey::ConfigsChanged`]): a classic `PUBLISH` on a cluster is forwarded
//!   over the cluster bus to every node, so a subscriber connected to any node receives it
//!   (fred pins the subscription to one node and re-subscribes after a reconnect or failover).
//!   Sharded pub/sub (`SPUBLISH`) is not needed at one message per config change.
//! - **SCAN** over keys is not used by the polling core; tests and the bench clean their prefix
//!   with one SCAN per primary and one `UNLINK` per key (`test_support::unlink_prefix`).

use domain::{CardId, DeviceId, TaskType};
use std::fmt::Write as _;

/// One Redis key (or pub/sub channel) of the contract.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RedisKey {
    /// `polling:shard:{shard}:queue:{type}`: zset, member = card id, score = next check (unix s).
    ShardQueue { shard: u32, task: TaskType },
    /// `polling:manual:{type}`: list of card ids pushed by operators, drained first.
    Manual { task: TaskType },
    /// `polling:decisive:{type}`: zset, member = card id, score = the time its poll of that type
    /// is due. Points at the cards whose next poll may stop or resume them (usage near the limit,
    /// real-name of a `not_realname` card, packages of a stopped card), so that the dispatch
    /// takes them before the rest of a backlog; the shard queue stays the card's one schedule.
    Decisive { task: TaskType },
    /// `polling:card:{card_id}`: JSON snapshot of the card, TTL 300 s, sliding on hit.
    Card { card: CardId },
    /// `polling:protect:stop:{device_id}`: the device is in a stop protect period.
    ProtectStop { device: DeviceId },
    /// `polling:protect:start:{device_id}`: the device is in a start protect period.
    ProtectStart { device: DeviceId },
    /// `polling:configs`: hash config id -> JSON, TTL 24 h (config manager).
    Configs,
    /// `polling:configs:changed`: pub/sub channel announcing a config change.
    ConfigsChanged,
    /// `polling:queue:wake`: pub/sub channel naming the shards that got entries due soon and
    /// the manual lists that got cards (`queue/wake.rs`).
    QueueWake,
    /// `polling:queue:wake:ledger`: hash `{type}:{shard}` (or `{type}:all`) -> a value never
    /// used before, written with every wake announced on [`RedisKey::QueueWake`]; each node
    /// reads it once a tick, so a lost message delays its shard by a tick at most.
    WakeLedger,
    /// `polling:concurrency:{type}`: zset of semaphore holders, token -> lease expiry.
    Concurrency { task: TaskType },
    /// `polling:concurrency:max:{type}`: string, the max concurrent tasks of that type.
    ConcurrencyMax { task: TaskType },
    /// `polling:init:progress`: hash written by the initializer.
    InitProgress,
    /// `polling:init:canary:{tag}`: string written by a completed initializer run, one per
    /// hash slot holding a shard queue; `tag` is chosen so that the key lands in that slot.
    /// Gone while the progress hash says completed: that slot's node lost its data.
    InitCanary { tag: u32 },
    /// `polling:reconcile:progress`: hash of the queue reconciliation that follows a config
    /// change (status, fingerprint, processed, added, removed, started_at, finished_at).
    ReconcileProgress,
    /// `polling:stats:{type}`: hash of task counters.
    Stats { task: TaskType },
    /// `polling:stats:{type}:minutes:{YYYYMMDDHH}`: hash `{MM}:{outcome}` -> count, one per
    /// UTC hour, TTL 3 h: polls per minute and failure rates over recent minutes.
    StatsMinutes { task: TaskType, hour: String },
    /// `polling:stats:gateway:minutes:{YYYYMMDDHH}`: hash `{MM}:{outcome}` -> gateway calls
    /// (`ok`, `error`, `throttled`), one per UTC hour, TTL 3 h.
    GatewayMinutes { hour: String },
    /// `polling:lock:card:{card_id}`: per-card evaluation lock of the stop/resume service.
    CardLock { card: CardId },
    /// `polling:lease:{job}`: which node runs a singleton job.
    Lease { job: String },
    /// `polling:ratelimit:gateway:{bucket}`: GCRA state of a gateway budget (one per carrier).
    RateLimit { bucket: String },
    /// `polling:carrier:health`: hash carrier id -> JSON of `domain::CarrierHealth`, published
    /// by worker nodes, read by the API (TTL 24 h after the last publish).
    CarrierHealth,
    /// `polling:stats:carrier:calls:{YYYYMMDDHH}`: hash `{MM}:{carrier_id}` -> calls made to
    /// the carrier by every node, one per UTC hour, TTL 3 h: a carrier's budget used.
    CarrierCallMinutes { hour: String },
    /// `polling:carrier:budget`: JSON of `domain::BudgetReport`, written by the
    /// `carrier_budget` job, read by the API and the alert evaluator (TTL 10 min).
    CarrierBudget,
    /// `polling:ui:session:{hash}`: a dashboard sign-in (JSON: the API key's hash and the
    /// session's CSRF token), under the SHA-256 of its cookie, expiring with the session.
    UiSession { hash: String },
    /// `polling:import:{id}`: JSON of a background card import (state, progress, report),
    /// written by the API replica running it, read by any (TTL 24 h).
    ImportJob { id: String },
}

/// Renders [`RedisKey`]s with the deployment prefix.
///
/// Cheap to clone; every component of this crate holds one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    /// Prepended verbatim to every key; empty in production.
    prefix: String,
}

impl Keys {
    /// Keys under `prefix` (e.g. `"t1767225600_3fa2:"` in a test, `""` in production).
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    /// The prefix every rendered key starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The wire name of `key`, e.g. `polling:shard:8:queue:carddata`.
    pub fn render(&self, key: &RedisKey) -> String {
        let mut s = String::with_capacity(self.prefix.len() + 40);
        s.push_str(&self.prefix);
        s.push_str("polling:");
        // Writing into a String cannot fail.
        let _ = match key {
            RedisKey::ShardQueue { shard, task } => write!(s, "shard:{shard}:queue:{task}"),
            RedisKey::Manual { task } => write!(s, "manual:{task}"),
            RedisKey::Decisive { task } => write!(s, "decisive:{task}"),
            RedisKey::Card { card } => write!(s, "card:{card}"),
            RedisKey::ProtectStop { device } => write!(s, "protect:stop:{device}"),
            RedisKey::ProtectStart { device } => write!(s, "protect:start:{device}"),
            RedisKey::Configs => write!(s, "configs"),
            RedisKey::ConfigsChanged => write!(s, "configs:changed"),
            RedisKey::QueueWake => write!(s, "queue:wake"),
            RedisKey::WakeLedger => write!(s, "queue:wake:ledger"),
            RedisKey::Concurrency { task } => write!(s, "concurrency:{task}"),
            RedisKey::ConcurrencyMax { task } => write!(s, "concurrency:max:{task}"),
            RedisKey::InitProgress => write!(s, "init:progress"),
            RedisKey::InitCanary { tag } => write!(s, "init:canary:{{{tag}}}"),
            RedisKey::ReconcileProgress => write!(s, "reconcile:progress"),
            RedisKey::Stats { task } => write!(s, "stats:{task}"),
            RedisKey::StatsMinutes { task, hour } => write!(s, "stats:{task}:minutes:{hour}"),
            RedisKey::GatewayMinutes { hour } => write!(s, "stats:gateway:minutes:{hour}"),
            RedisKey::CardLock { card } => write!(s, "lock:card:{card}"),
            RedisKey::Lease { job } => write!(s, "lease:{job}"),
            RedisKey::RateLimit { bucket } => write!(s, "ratelimit:gateway:{bucket}"),
            RedisKey::CarrierHealth => write!(s, "carrier:health"),
            RedisKey::CarrierCallMinutes { hour } => write!(s, "stats:carrier:calls:{hour}"),
            RedisKey::CarrierBudget => write!(s, "carrier:budget"),
            RedisKey::UiSession { hash } => write!(s, "ui:session:{hash}"),
            RedisKey::ImportJob { id } => write!(s, "import:{id}"),
        };
        s
    }

    /// Shorthand for the queue of `task` on `shard`.
    pub fn shard_queue(&self, shard: u32, task: TaskType) -> String {
        self.render(&RedisKey::ShardQueue { shard, task })
    }

    /// The queue keys of every task type on every shard (`4 x shard_count` keys).
    pub fn all_shard_queues(&self, shard_count: u32) -> Vec<String> {
        TaskType::ALL
            .into_iter()
            .flat_map(|task| (0..shard_count).map(move |shard| (shard, task)))
            .map(|(shard, task)| self.shard_queue(shard, task))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_contract_key() {
        let k = Keys::default();
        let cases = [
            (
                RedisKey::ShardQueue {
                    shard: 8,
                    task: TaskType::Carddata,
                },
                "polling:shard:8:queue:carddata",
            ),
            (
                RedisKey::Manual {
                    task: TaskType::Realname,
                },
                "polling:manual:realname",
            ),
            (
                RedisKey::Decisive {
                    task: TaskType::Carddata,
                },
                "polling:decisive:carddata",
            ),
            (RedisKey::Card { card: CardId(42) }, "polling:card:42"),
            (
                RedisKey::ProtectStop {
                    device: DeviceId(7),
                },
                "polling:protect:stop:7",
            ),
            (
                RedisKey::ProtectStart {
                    device: DeviceId(7),
                },
                "polling:protect:start:7",
            ),
            (RedisKey::Configs, "polling:configs"),
            (RedisKey::ConfigsChanged, "polling:configs:changed"),
            (RedisKey::QueueWake, "polling:queue:wake"),
            (RedisKey::WakeLedger, "polling:queue:wake:ledger"),
            (
                RedisKey::Concurrency {
                    task: TaskType::Package,
                },
                "polling:concurrency:package",
            ),
            (
                RedisKey::ConcurrencyMax {
                    task: TaskType::Protect,
                },
                "polling:concurrency:max:protect",
            ),
            (RedisKey::InitProgress, "polling:init:progress"),
            (RedisKey::InitCanary { tag: 42 }, "polling:init:canary:{42}"),
            (
                RedisKey::Stats {
                    task: TaskType::Carddata,
                },
                "polling:stats:carddata",
            ),
            (
                RedisKey::StatsMinutes {
                    task: TaskType::Carddata,
                    hour: "2026120120".into(),
                },
                "polling:stats:carddata:minutes:2026120120",
            ),
            (
                RedisKey::GatewayMinutes {
                    hour: "2026120120".into(),
                },
                "polling:stats:gateway:minutes:2026120120",
            ),
            (
                RedisKey::CardLock { card: CardId(5) },
                "polling:lock:card:5",
            ),
            (
                RedisKey::Lease {
                    job: "initializer".into(),
                },
                "polling:lease:initializer",
            ),
            (
                RedisKey::RateLimit { bucket: "3".into() },
                "polling:ratelimit:gateway:3",
            ),
            (RedisKey::CarrierHealth, "polling:carrier:health"),
            (
                RedisKey::CarrierCallMinutes {
                    hour: "2026120120".into(),
                },
                "polling:stats:carrier:calls:2026120120",
            ),
            (RedisKey::CarrierBudget, "polling:carrier:budget"),
            (
                RedisKey::UiSession {
                    hash: "ab12".into(),
                },
                "polling:ui:session:ab12",
            ),
            (
                RedisKey::ImportJob { id: "7f3a".into() },
                "polling:import:7f3a",
            ),
        ];
        for (key, want) in cases {
            assert_eq!(k.render(&key), want);
            assert_eq!(Keys::new("t1_ab:").render(&key), format!("t1_ab:{want}"));
        }
    }

    #[test]
    fn all_shard_queues_covers_four_types_times_shards() {
        let all = Keys::default().all_shard_queues(16);
        assert_eq!(all.len(), 64);
        assert!(all.contains(&"polling:shard:15:queue:protect".to_owned()));
    }
}
