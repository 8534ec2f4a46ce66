//! Queue membership made equal to what a card's matched config schedules
//! (`docs/rules.md`, "Lifecycle": a fact config matching reads changed, or a config changed).
//!
//! Unlike the lifecycle's remove-then-add, alignment never moves an existing entry: a card
//! already queued for a type keeps its score (`ZADD NX`), one no longer scheduled for a type
//! leaves it (`ZREM`). So it is idempotent and safe to run over cards that are being polled.

use super::score::to_score;
use super::{CHUNK, wake};
use crate::{PollingQueueManager, QueueError};
use chrono::{DateTime, Utc};
use domain::{CardId, TaskType};
use fred::prelude::*;
use fred::types::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What an alignment changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Aligned {
    /// Entries added (due at the given time) for types the cards were missing.
    pub added: u64,
    /// Entries removed for types no longer scheduled.
    pub removed: u64,
}

impl Aligned {
    pub fn add(&mut self, other: Aligned) {
        self.added += other.added;
        self.removed += other.removed;
    }

    pub fn changed(&self) -> bool {
        self.added + self.removed > 0
    }
}

impl PollingQueueManager {
    /// Makes the queues of many cards match `wanted[i]` (the types card `i` must be queued
    /// for; empty: none), adding missing entries with score `due`. One pipeline: per shard and
    /// type one variadic `ZADD NX` and one `ZREM`.
    ///
    /// A removal is only as fresh as the facts `wanted` was computed from: a caller whose facts
    /// may have changed since it read them re-reads the cards whose entries it removed and
    /// calls [`add_missing`](Self::add_missing) (lifecycle's `restore_wanted`).
    pub async fn align(
        &self,
        cards: &[(CardId, [bool; 4])],
        due: DateTime<Utc>,
    ) -> Result<Aligned, QueueError> {
        self.write_plan(cards, due, true).await
    }

    /// The adding half of [`align`](Self::align): `ZADD NX` of each wanted type, due at `due`;
    /// nothing is removed and existing entries keep their scores.
    pub async fn add_missing(
        &self,
        cards: &[(CardId, [bool; 4])],
        due: DateTime<Utc>,
    ) -> Result<u64, QueueError> {
        Ok(self.write_plan(cards, due, false).await?.added)
    }

    async fn write_plan(
        &self,
        cards: &[(CardId, [bool; 4])],
        due: DateTime<Utc>,
        remove: bool,
    ) -> Result<Aligned, QueueError> {
        if cards.is_empty() {
            return Ok(Aligned::default());
        }
        let score = to_score(due);
        // (shard, type) -> (members to add, members to remove)
        let mut plan = BTreeMap::<(u32, usize), (Vec<(f64, String)>, Vec<String>)>::new();
        for (card, wanted) in cards {
            let shard = self.shard_of(*card);
            for task in TaskType::ALL {
                let entry = plan.entry((shard, task.index())).or_default();
                if wanted[task.index()] {
                    entry.0.push((score, card.to_string()));
                } else if remove {
                    entry.1.push(card.to_string());
                }
            }
        }
        let pipe = self.pool.next().pipeline();
        // Per reply: the queue it added to, or `None` for a removal.
        let mut kinds = Vec::new();
        for ((shard, task), (add, remove)) in &plan {
            let key = self.keys.shard_queue(*shard, TaskType::ALL[*task]);
            for chunk in add.chunks(CHUNK) {
                let _: () = pipe
                    .zadd(
                        key.as_str(),
                        Some(SetOptions::NX),
                        None,
                        false,
                        false,
                        chunk.to_vec(),
                    )
                    .await?;
                kinds.push(Some((*shard, *task)));
            }
            for chunk in remove.chunks(CHUNK) {
                let _: () = pipe.zrem(key.as_str(), chunk.to_vec()).await?;
                kinds.push(None);
            }
        }
        let replies: Vec<Value> = pipe.all().await?;
        let mut out = Aligned::default();
        let mut woken: [BTreeSet<u32>; 4] = Default::default();
        for (kind, reply) in kinds.into_iter().zip(replies) {
            let n = reply.as_u64().unwrap_or(0);
            match kind {
                Some((shard, task)) => {
                    out.added += n;
                    if n > 0 {
                        woken[task].insert(shard);
                    }
                }
                None => out.removed += n,
            }
        }
        // Entries added due soon wake the loops (a second round trip, only when they are).
        if wake::due_soon(due, self.clock.now()) {
            let messages = TaskType::ALL
                .into_iter()
                .zip(&woken)
                .filter_map(|(task, shards)| wake::shards_message(task, shards))
                .collect();
            self.publish_wakes(messages).await;
        }
        Ok(out)
    }
}
