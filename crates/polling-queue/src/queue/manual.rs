//! The manual lists `polling:manual:{type}` of [`PollingQueueManager`]: card ids operators
//! pushed, drained by the scheduler before the shard queues.

use super::score::parse_members;
use super::wake;
use crate::{PollingQueueManager, QueueError, RedisKey, scripts};
use domain::{CardId, TaskType};
use fred::prelude::*;

impl PollingQueueManager {
    /// Pushes `card` on the manual list of `task` (operators); the scheduler drains it first.
    pub async fn enqueue_manual(&self, card: CardId, task: TaskType) -> Result<(), QueueError> {
        self.enqueue_manual_many(&[card], task).await
    }

    /// Pushes many cards on the manual list of `task` (batch trigger), 1,000 per RPUSH, in one
    /// round trip.
    pub async fn enqueue_manual_many(
        &self,
        cards: &[CardId],
        task: TaskType,
    ) -> Result<(), QueueError> {
        if cards.is_empty() {
            return Ok(());
        }
        let key = self.keys.render(&RedisKey::Manual { task });
        let pipe = self.pool.next().pipeline();
        for chunk in cards.chunks(1_000) {
            let members: Vec<String> = chunk.iter().map(CardId::to_string).collect();
            let _: () = pipe.rpush(key.as_str(), members).await?;
        }
        wake::queue_announcement(&pipe, &self.keys, wake::manual_message(task)).await?;
        let _: Vec<i64> = pipe.all().await?;
        Ok(())
    }

    /// Empties the manual list of `task` (operator cancel); how many cards were waiting.
    pub async fn clear_manual(&self, task: TaskType) -> Result<u64, QueueError> {
        let key = self.keys.render(&RedisKey::Manual { task });
        let pipe = self.pool.next().pipeline();
        let _: () = pipe.llen(key.as_str()).await?;
        let _: () = pipe.del(key.as_str()).await?;
        let (len, _deleted): (u64, i64) = pipe.all().await?;
        Ok(len)
    }

    /// Pops up to `n` cards from the manual list of `task`. The cards' queue entries are not
    /// touched: they keep their scheduled time (see [`claim`](Self::claim)).
    pub async fn take_manual(&self, task: TaskType, n: usize) -> Result<Vec<CardId>, QueueError> {
        let key = self.keys.render(&RedisKey::Manual { task });
        if n == 0 {
            return Ok(Vec::new());
        }
        let popped: Option<Vec<String>> = self.pool.lpop(key.as_str(), Some(n)).await?;
        parse_members(&key, popped.unwrap_or_default())
    }

    /// Length of the manual list of `task`.
    pub async fn manual_len(&self, task: TaskType) -> Result<u64, QueueError> {
        Ok(self
            .pool
            .llen(self.keys.render(&RedisKey::Manual { task }))
            .await?)
    }

    /// Leases cards taken from a manual list, as a dequeue would, so that no other node polls
    /// them meanwhile; returns the cards to poll now. A card whose entry holds a lease that has
    /// not ended is being polled elsewhere and is left out (that poll covers the trigger); a
    /// card not queued for `task` is polled all the same (an operator asked for it) and its
    /// handler will not add it back. One script call per shard, pipelined. Whether a lease has
    /// ended is decided by the Redis server's clock.
    pub async fn claim(&self, task: TaskType, cards: &[CardId]) -> Result<Vec<CardId>, QueueError> {
        if cards.is_empty() {
            return Ok(Vec::new());
        }
        let codes = self.claim_codes(&scripts::CLAIM, task, cards).await?;
        let mut claimed = Vec::with_capacity(cards.len());
        for (card, code) in codes {
            if code == 0 {
                tracing::debug!(card_id = card.get(), task = %task,
                    "manual trigger of a card being polled elsewhere; that poll covers it");
            } else {
                claimed.push(card);
            }
        }
        Ok(claimed)
    }
}
