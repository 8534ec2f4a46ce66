//! Leasing cards picked outside their shard queues (an operator's manual trigger, a decisive
//! lane's pick): one script call per shard, pipelined, one code per card.

use super::score::lease_ms;
use crate::{PollingQueueManager, QueueError, scripts};
use domain::{CardId, TaskType};
use fred::types::Value;
use fred::types::scripts::Script;
use std::collections::BTreeMap;

impl PollingQueueManager {
    /// Runs `script` (`claim.lua` or `claim_due.lua`: `ARGV[1]` the lease, then card ids) on
    /// the shard queue of each of `cards`; each card with the code the script gave it.
    pub(super) async fn claim_codes(
        &self,
        script: &Script,
        task: TaskType,
        cards: &[CardId],
    ) -> Result<Vec<(CardId, i64)>, QueueError> {
        let mut by_shard = BTreeMap::<u32, Vec<CardId>>::new();
        for card in cards {
            by_shard
                .entry(self.shard_of(*card))
                .or_default()
                .push(*card);
        }
        let lease = lease_ms(self.settings.lease);
        let calls = by_shard.iter().map(|(shard, members)| {
            let mut args = vec![Value::from(lease)];
            args.extend(members.iter().map(|c| Value::from(c.get())));
            scripts::eval::<Vec<i64>>(
                script,
                &self.pool,
                self.keys.shard_queue(*shard, task),
                args,
            )
        });
        let codes = futures::future::try_join_all(calls).await?;
        Ok(by_shard
            .into_values()
            .zip(codes)
            .flat_map(|(members, codes)| members.into_iter().zip(codes))
            .collect())
    }
}
