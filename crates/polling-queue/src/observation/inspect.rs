//! [`QueueInspector`]: read-only views of one card's or device's keys, for the admin API's
//! explain page and for tests: the card's score in every queue, the protect periods' remaining
//! time, whether the card's snapshot is cached.

use crate::{Keys, QueueError, RedisKey};
use domain::{CardId, DeviceId, TaskType};
use fred::prelude::*;
use std::time::Duration;

/// Remaining time of a device's protect periods (`None`: no such period).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtectTtl {
    pub stop: Option<Duration>,
    pub start: Option<Duration>,
}

/// Reads of the polling keys of one card or device; writes nothing.
#[derive(Debug, Clone)]
pub struct QueueInspector {
    pool: Pool,
    keys: Keys,
    shard_count: u32,
}

impl QueueInspector {
    pub fn new(pool: Pool, keys: Keys, shard_count: u32) -> Self {
        Self {
            pool,
            keys,
            shard_count: shard_count.max(1),
        }
    }

    /// The card's score (next check, unix seconds) in each task type's queue, in
    /// [`TaskType::ALL`] order, one round trip.
    pub async fn scores(&self, card: CardId) -> Result<[Option<f64>; 4], QueueError> {
        let shard = card.shard(self.shard_count);
        let pipe = self.pool.next().pipeline();
        for task in TaskType::ALL {
            let _: () = pipe
                .zscore(self.keys.shard_queue(shard, task), card.to_string())
                .await?;
        }
        let (a, b, c, d): (Option<f64>, Option<f64>, Option<f64>, Option<f64>) = pipe.all().await?;
        Ok([a, b, c, d])
    }

    /// Whether the card is a member of any shard queue of any type (every shard is checked,
    /// not only the card's own: a wrong shard would be a bug worth seeing).
    pub async fn queued_anywhere(&self, card: CardId) -> Result<bool, QueueError> {
        let pipe = self.pool.next().pipeline();
        let keys = self.keys.all_shard_queues(self.shard_count);
        for key in &keys {
            let _: () = pipe.zscore(key.as_str(), card.to_string()).await?;
        }
        let scores: Vec<Option<f64>> = pipe.all().await?;
        Ok(scores.iter().any(Option::is_some))
    }

    /// Whether `polling:card:{id}` exists.
    pub async fn cached(&self, card: CardId) -> Result<bool, QueueError> {
        let n: i64 = self
            .pool
            .exists(self.keys.render(&RedisKey::Card { card }))
            .await?;
        Ok(n > 0)
    }

    /// Remaining time of the device's stop and start protect periods.
    pub async fn protect_ttl(&self, device: DeviceId) -> Result<ProtectTtl, QueueError> {
        let pipe = self.pool.next().pipeline();
        let _: () = pipe
            .pttl(self.keys.render(&RedisKey::ProtectStop { device }))
            .await?;
        let _: () = pipe
            .pttl(self.keys.render(&RedisKey::ProtectStart { device }))
            .await?;
        let (stop, start): (i64, i64) = pipe.all().await?;
        let ttl = |ms: i64| (ms >= 0).then(|| Duration::from_millis(ms.unsigned_abs()));
        Ok(ProtectTtl {
            stop: ttl(stop),
            start: ttl(start),
        })
    }

    /// Whether `card` waits on the manual list of `task`.
    pub async fn in_manual(&self, card: CardId, task: TaskType) -> Result<bool, QueueError> {
        let pos: Option<i64> = self
            .pool
            .lpos(
                self.keys.render(&RedisKey::Manual { task }),
                card.to_string(),
                None,
                None,
                None,
            )
            .await?;
        Ok(pos.is_some())
    }
}
