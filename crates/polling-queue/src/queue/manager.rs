//! [`PollingQueueManager`]: every operation on the sharded queues and the manual lists.

use super::score::{group_by_shard, lease_ms, parse_members};
use super::{CHUNK, reschedule};
use crate::{Keys, QueueError, scripts};
use chrono::{DateTime, Utc};
use domain::{CardId, Clock, TaskType};
use fred::prelude::*;
use fred::types::{SetOptions, Value};
use std::{sync::Arc, time::Duration};

/// Fixed per deployment: both processes must use the same values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    /// Number of shards per task type; a card lives on shard `card_id % shard_count`.
    pub shard_count: u32,
    /// How long a dequeued card stays invisible before it comes due again by itself.
    pub lease: Duration,
}

impl Default for QueueSettings {
    fn default() -> Self {
        Self {
            shard_count: 16,
            lease: Duration::from_secs(300),
        }
    }
}

/// The queues: sorted sets `polling:shard:{shard}:queue:{type}` and lists `polling:manual:{type}`
/// (manual lists in `manual.rs`, monitoring reads in `observation/depth.rs`).
///
/// Shared by the API and the worker; needs nothing but Redis. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PollingQueueManager {
    pub(crate) pool: Pool,
    pub(crate) keys: Keys,
    pub(crate) settings: QueueSettings,
    pub(crate) clock: Arc<dyn Clock>,
    /// Group commit of [`reschedule`](Self::reschedule): the reschedules of concurrent polls go
    /// out as one pipeline of variadic `ZADD XX`, one per queue key.
    rescheduler: reschedule::Rescheduler,
}

impl PollingQueueManager {
    pub fn new(pool: Pool, keys: Keys, mut settings: QueueSettings, clock: Arc<dyn Clock>) -> Self {
        settings.shard_count = settings.shard_count.max(1);
        let rescheduler = reschedule::writer(pool.clone(), keys.clone(), settings.shard_count);
        Self {
            pool,
            keys,
            settings,
            clock,
            rescheduler,
        }
    }

    pub fn settings(&self) -> QueueSettings {
        self.settings
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The shard `card` is routed to.
    pub fn shard_of(&self, card: CardId) -> u32 {
        card.shard(self.settings.shard_count)
    }

    /// Takes up to `batch` due cards (score <= now, oldest first) of one shard and leases them:
    /// they stay queued with score `now + lease`, so a crashed worker loses nothing. "Now" is
    /// the Redis server's clock (`TIME` in the script), not this node's.
    pub async fn dequeue_ready(
        &self,
        shard: u32,
        task: TaskType,
        batch: usize,
    ) -> Result<Vec<CardId>, QueueError> {
        if batch == 0 {
            return Ok(Vec::new());
        }
        let key = self.keys.shard_queue(shard, task);
        let args = vec![
            Value::from(batch as i64),
            Value::from(lease_ms(self.settings.lease)),
        ];
        let members: Vec<String> =
            scripts::eval(&scripts::DEQUEUE, &self.pool, key.clone(), args).await?;
        parse_members(&key, members)
    }

    /// Puts `card` in the queue at `next_check_at` whether or not it is there (lifecycle).
    pub async fn requeue(
        &self,
        card: CardId,
        task: TaskType,
        next_check_at: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        self.zadd(task, &[(card, next_check_at)], None).await
    }

    /// Moves `card` to `next_check_at` only if it is still queued (`ZADD XX`, handlers): a card
    /// removed meanwhile is not resurrected.
    pub async fn reschedule(
        &self,
        card: CardId,
        task: TaskType,
        next_check_at: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        self.rescheduler
            .submit((task, card, next_check_at))
            .await
            .map_err(|closed| QueueError::Batch(domain::Cause::new(closed)))?
            .map_err(QueueError::Batch)
    }

    /// [`requeue`](Self::requeue) for many cards, pipelined in one round trip.
    pub async fn requeue_many(
        &self,
        task: TaskType,
        entries: &[(CardId, DateTime<Utc>)],
    ) -> Result<(), QueueError> {
        self.zadd(task, entries, None).await
    }

    /// [`reschedule`](Self::reschedule) for many cards, pipelined in one round trip.
    pub async fn reschedule_many(
        &self,
        task: TaskType,
        entries: &[(CardId, DateTime<Utc>)],
    ) -> Result<(), QueueError> {
        self.zadd(task, entries, Some(SetOptions::XX)).await
    }

    async fn zadd(
        &self,
        task: TaskType,
        entries: &[(CardId, DateTime<Utc>)],
        opt: Option<SetOptions>,
    ) -> Result<(), QueueError> {
        if entries.is_empty() {
            return Ok(());
        }
        let pipe = self.pool.next().pipeline();
        for (shard, members) in group_by_shard(entries, self.settings.shard_count) {
            let key = self.keys.shard_queue(shard, task);
            for chunk in members.chunks(CHUNK) {
                let (k, o) = (key.as_str(), opt.clone());
                let _: () = pipe.zadd(k, o, None, false, false, chunk.to_vec()).await?;
            }
        }
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }

    /// The score (unix seconds) of `card` in the queue of `task`, if queued. For tests and ops.
    pub async fn score_of(&self, card: CardId, task: TaskType) -> Result<Option<f64>, QueueError> {
        Ok(self
            .pool
            .zscore(
                self.keys.shard_queue(self.shard_of(card), task),
                card.to_string(),
            )
            .await?)
    }
}
