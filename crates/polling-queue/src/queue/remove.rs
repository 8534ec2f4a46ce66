//! Removing cards from the queues (lifecycle: disabled, deleted; seed: `RemoveFromAllQueues`).

use super::CHUNK;
use crate::{PollingQueueManager, QueueError, RedisKey};
use domain::{CardId, TaskType};
use fred::prelude::*;
use fred::types::Value;

impl PollingQueueManager {
    /// Removes `card` from every queue: all 4 task types x every shard (`docs/rules.md`,
    /// "Lifecycle": a card switched off or deleted leaves every queue), in one round
    /// trip. Idempotent: removing a card that is not queued succeeds.
    pub async fn remove_from_all_queues(&self, card: CardId) -> Result<(), QueueError> {
        self.remove(&[card], false, Shards::All).await
    }

    /// [`remove_from_all_queues`](Self::remove_from_all_queues) for many cards at once, each
    /// from the 4 keys of its own shard: every writer routes a card to `card_id % shard_count`,
    /// so that is the only shard it can be in (the initializer refuses another shard count;
    /// `cmp-worker check` reports a card found elsewhere). For 10,000 cards that is 4 commands
    /// per shard instead of 64 per card.
    pub async fn remove_many_from_all_queues(&self, cards: &[CardId]) -> Result<(), QueueError> {
        self.remove(cards, false, Shards::Own).await
    }

    /// A card was deleted: out of every queue (all shards, as above), and its cached entry
    /// dropped. Idempotent, so the API and the worker may both call it.
    pub async fn on_card_deleted(&self, card: CardId) -> Result<(), QueueError> {
        self.remove(&[card], true, Shards::All).await
    }

    async fn remove(
        &self,
        cards: &[CardId],
        drop_cache: bool,
        shards: Shards,
    ) -> Result<(), QueueError> {
        if cards.is_empty() {
            return Ok(());
        }
        let members: Vec<String> = cards.iter().map(CardId::to_string).collect();
        let mut by_shard = std::collections::BTreeMap::<u32, Vec<String>>::new();
        match shards {
            Shards::All => {
                for shard in 0..self.settings.shard_count {
                    by_shard.insert(shard, members.clone());
                }
            }
            Shards::Own => {
                for (card, member) in cards.iter().zip(members) {
                    by_shard
                        .entry(self.shard_of(*card))
                        .or_default()
                        .push(member);
                }
            }
        }
        let pipe = self.pool.next().pipeline();
        for (shard, members) in &by_shard {
            for task in TaskType::ALL {
                let key = self.keys.shard_queue(*shard, task);
                for chunk in members.chunks(CHUNK) {
                    let _: () = pipe.zrem(key.as_str(), chunk.to_vec()).await?;
                }
            }
        }
        if drop_cache {
            for &card in cards {
                let _: () = pipe.del(self.keys.render(&RedisKey::Card { card })).await?;
            }
        }
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }
}

/// Which shards a removal sweeps.
#[derive(Clone, Copy)]
enum Shards {
    All,
    Own,
}
