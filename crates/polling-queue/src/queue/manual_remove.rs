//! Taking one card off every manual list (a deleted card must leave no entry anywhere).

use crate::{PollingQueueManager, QueueError, RedisKey};
use domain::{CardId, TaskType};
use fred::prelude::*;

impl PollingQueueManager {
    /// Removes every occurrence of `card` from the four manual lists, in one round trip;
    /// returns how many entries went. `LREM` walks each list: they hold what operators
    /// pushed and the scheduler has not drained yet, normally little.
    pub async fn remove_from_manual_lists(&self, card: CardId) -> Result<u64, QueueError> {
        let pipe = self.pool.next().pipeline();
        for task in TaskType::ALL {
            let _: () = pipe
                .lrem(
                    self.keys.render(&RedisKey::Manual { task }),
                    0,
                    card.to_string(),
                )
                .await?;
        }
        let removed: Vec<i64> = pipe.all().await?;
        Ok(removed.into_iter().map(|n| n.unsigned_abs()).sum())
    }
}
