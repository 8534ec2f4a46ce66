//! The manual lists `polling:manual:{type}` of [`PollingQueueManager`]: card ids operators
//! pushed, drained by the scheduler before the shard queues.

use crate::score::parse_members;
use crate::{PollingQueueManager, QueueError, RedisKey};
use domain::{CardId, TaskType};
use fred::prelude::*;

impl PollingQueueManager {
    /// Pushes `card` on the manual list of `task` (operators); the scheduler drains it first.
    pub async fn enqueue_manual(&self, card: CardId, task: TaskType) -> Result<(), QueueError> {
        let _: i64 = self
            .pool
            .rpush(
                self.keys.render(&RedisKey::Manual { task }),
                card.to_string(),
            )
            .await?;
        Ok(())
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
    /// touched: they keep their scheduled time.
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
}
