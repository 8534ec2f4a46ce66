//! [`PollingQueueManager`]: every operation on the sharded queues and the manual lists.

use super::score::{group_by_shard, lease_ms, parse_members};
use super::{CHUNK, reschedule, wake};
use crate::{Keys, QueueError, scripts};
use chrono::{DateTime, Utc};
use domain::{CardId, Clock, TaskType};
use fred::prelude::*;
use fred::types::sorted_sets::Ordering;
use fred::types::{SetOptions, Value};
use std::collections::BTreeSet;
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

/// What one dequeue of a shard took, and when the shard has more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dequeued {
    /// The due cards taken and leased, oldest first.
    pub cards: Vec<CardId>,
    /// How long until the earliest entry left comes due (a waiting card or a lease; zero when
    /// more were due than the batch took); `None`: the queue is empty.
    pub next_due_in: Option<Duration>,
}

impl Dequeued {
    /// A script's `{due, wait}` answer from `key` (`dequeue.lua`, `take_due.lua`): the members
    /// and the milliseconds until the earliest entry left is due (-1: none left).
    pub(crate) fn from_answer(key: &str, answer: Vec<Value>) -> Result<Self, QueueError> {
        let mut answer = answer.into_iter();
        let members: Vec<String> = match answer.next() {
            Some(due) => due.convert()?,
            None => Vec::new(),
        };
        let next_due_in = answer
            .next()
            .and_then(|wait| wait.as_i64())
            .and_then(|ms| u64::try_from(ms).ok())
            .map(Duration::from_millis);
        Ok(Dequeued {
            cards: parse_members(key, members)?,
            next_due_in,
        })
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
        let rescheduler = reschedule::writer(
            pool.clone(),
            keys.clone(),
            settings.shard_count,
            clock.clone(),
        );
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
        Ok(self.dequeue(shard, task, batch).await?.cards)
    }

    /// [`dequeue_ready`](Self::dequeue_ready), also saying when the shard's earliest entry left
    /// comes due, in the same round trip: what a dispatch loop sleeps on.
    pub async fn dequeue(
        &self,
        shard: u32,
        task: TaskType,
        batch: usize,
    ) -> Result<Dequeued, QueueError> {
        if batch == 0 {
            return Ok(Dequeued {
                cards: Vec::new(),
                next_due_in: Some(Duration::ZERO),
            });
        }
        let key = self.keys.shard_queue(shard, task);
        let args = vec![
            Value::from(batch as i64),
            Value::from(lease_ms(self.settings.lease)),
        ];
        let answer: Vec<Value> =
            scripts::eval(&scripts::DEQUEUE, &self.pool, key.clone(), args).await?;
        Dequeued::from_answer(&key, answer)
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
        self.reschedule_with(card, task, next_check_at, false).await
    }

    /// [`reschedule`](Self::reschedule) of a card whose poll at `next_check_at` may stop or
    /// resume it: it also goes in the decisive lane of `task`, so that a backlog does not hold
    /// it back (`decisive.rs`).
    pub async fn reschedule_decisive(
        &self,
        card: CardId,
        task: TaskType,
        next_check_at: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        self.reschedule_with(card, task, next_check_at, true).await
    }

    async fn reschedule_with(
        &self,
        card: CardId,
        task: TaskType,
        next_check_at: DateTime<Utc>,
        decisive: bool,
    ) -> Result<(), QueueError> {
        self.rescheduler
            .submit((task, card, next_check_at, decisive))
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

    /// Moves each card to its time only if it is still queued and due earlier (`ZADD XX GT`):
    /// a poll answered by other means (the carrier record sync) is not asked again before its
    /// interval, and never earlier than it was due; a card removed meanwhile is not resurrected.
    pub async fn postpone_many(
        &self,
        task: TaskType,
        entries: &[(CardId, DateTime<Utc>)],
    ) -> Result<(), QueueError> {
        self.zadd_ordered(
            task,
            entries,
            Some(SetOptions::XX),
            Some(Ordering::GreaterThan),
        )
        .await
    }

    async fn zadd(
        &self,
        task: TaskType,
        entries: &[(CardId, DateTime<Utc>)],
        opt: Option<SetOptions>,
    ) -> Result<(), QueueError> {
        self.zadd_ordered(task, entries, opt, None).await
    }

    async fn zadd_ordered(
        &self,
        task: TaskType,
        entries: &[(CardId, DateTime<Utc>)],
        opt: Option<SetOptions>,
        ordering: Option<Ordering>,
    ) -> Result<(), QueueError> {
        if entries.is_empty() {
            return Ok(());
        }
        let pipe = self.pool.next().pipeline();
        for (shard, members) in group_by_shard(entries, self.settings.shard_count) {
            let key = self.keys.shard_queue(shard, task);
            for chunk in members.chunks(CHUNK) {
                let (k, o, g) = (key.as_str(), opt.clone(), ordering.clone());
                let _: () = pipe.zadd(k, o, g, false, false, chunk.to_vec()).await?;
            }
        }
        // In the same round trip: wake the loops for the shards that got entries due soon.
        let now = self.clock.now();
        let soon: BTreeSet<u32> = entries
            .iter()
            .filter(|(_, at)| wake::due_soon(*at, now))
            .map(|(card, _)| self.shard_of(*card))
            .collect();
        if let Some(message) = wake::shards_message(task, &soon) {
            wake::queue_announcement(&pipe, &self.keys, message).await?;
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
