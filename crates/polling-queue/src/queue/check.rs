//! The Redis side of `cmp-worker check [--repair]`: read queue membership in bulk, walk every
//! shard key with `ZSCAN`, and the two repairs (add a missing entry without touching an
//! existing one, remove an entry from one given key).
//!
//! Nothing here moves a score: additions are `ZADD NX`, removals `ZREM`.

use super::CHUNK;
use crate::{PollingQueueManager, QueueError};
use domain::{CardId, TaskType};
use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand, Value};
use std::collections::BTreeMap;

/// One `ZSCAN` step over a shard key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanStep {
    /// The cursor of the next step; `"0"` when the walk is complete.
    pub cursor: String,
    /// The members returned by this step (a member may come back twice over one walk).
    pub members: Vec<String>,
}

impl ScanStep {
    pub fn done(&self) -> bool {
        self.cursor == "0"
    }
}

impl PollingQueueManager {
    /// For each card, in which of the four queues of its own shard it is (`[TaskType::index]`).
    /// One pipeline: one `ZMSCORE` per (shard, type, chunk).
    pub async fn membership(&self, cards: &[CardId]) -> Result<Vec<[bool; 4]>, QueueError> {
        let mut out = vec![[false; 4]; cards.len()];
        if cards.is_empty() {
            return Ok(out);
        }
        // shard -> (positions in `cards`, members)
        let mut by_shard = BTreeMap::<u32, (Vec<usize>, Vec<String>)>::new();
        for (i, card) in cards.iter().enumerate() {
            let entry = by_shard.entry(self.shard_of(*card)).or_default();
            entry.0.push(i);
            entry.1.push(card.to_string());
        }
        let pipe = self.pool.next().pipeline();
        // For each command: the task and the positions its reply answers for.
        let mut plan = Vec::new();
        for (shard, (positions, members)) in &by_shard {
            for task in TaskType::ALL {
                let key = self.keys.shard_queue(*shard, task);
                for (pos, chunk) in positions.chunks(CHUNK).zip(members.chunks(CHUNK)) {
                    let _: () = pipe.zmscore(key.as_str(), chunk.to_vec()).await?;
                    plan.push((task, pos));
                }
            }
        }
        let replies: Vec<Value> = pipe.all().await?;
        for ((task, positions), reply) in plan.into_iter().zip(replies) {
            let scores = match reply {
                Value::Array(values) => values,
                // A single-member ZMSCORE may come back unwrapped.
                other => vec![other],
            };
            for (&i, score) in positions.iter().zip(scores) {
                out[i][task.index()] = !score.is_null();
            }
        }
        Ok(out)
    }

    /// One `ZSCAN` step over the queue of `task` on `shard`, at most about `count` members.
    /// Start with cursor `"0"`; the walk is complete when [`ScanStep::done`].
    pub async fn scan_queue(
        &self,
        shard: u32,
        task: TaskType,
        cursor: &str,
        count: u32,
    ) -> Result<ScanStep, QueueError> {
        let key = self.keys.shard_queue(shard, task);
        let zscan = CustomCommand::new_static("ZSCAN", ClusterHash::FirstKey, false);
        let args = vec![
            Value::from(key.as_str()),
            Value::from(cursor),
            Value::from_static_str("COUNT"),
            Value::from(i64::from(count.max(1))),
        ];
        let reply: Value = self.pool.next().custom(zscan, args).await?;
        let corrupt = |detail: &str| QueueError::Corrupt {
            key: key.clone(),
            detail: format!("ZSCAN reply: {detail}"),
            source: None,
        };
        let Value::Array(mut parts) = reply else {
            return Err(corrupt("not an array"));
        };
        if parts.len() != 2 {
            return Err(corrupt("not [cursor, entries]"));
        }
        let entries = parts.pop().unwrap_or(Value::Null);
        let cursor = parts
            .pop()
            .and_then(|c| c.as_string())
            .ok_or_else(|| corrupt("no cursor"))?;
        let Value::Array(entries) = entries else {
            return Err(corrupt("entries are not an array"));
        };
        // member, score, member, score, ...
        let members = entries
            .into_iter()
            .step_by(2)
            .map(|m| {
                m.as_string()
                    .ok_or_else(|| corrupt("member is not a string"))
            })
            .collect::<Result<_, _>>()?;
        Ok(ScanStep { cursor, members })
    }

    /// Adds each `(card, task, score)` to the queue of `task` on the card's own shard unless
    /// it is there already (`ZADD NX`: an existing score is never moved). Returns how many
    /// entries were new.
    pub async fn add_if_absent(
        &self,
        entries: &[(CardId, TaskType, f64)],
    ) -> Result<u64, QueueError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let mut by_key = BTreeMap::<(u32, usize), Vec<(f64, String)>>::new();
        for (card, task, score) in entries {
            by_key
                .entry((self.shard_of(*card), task.index()))
                .or_default()
                .push((*score, card.to_string()));
        }
        let pipe = self.pool.next().pipeline();
        for ((shard, task), members) in &by_key {
            let key = self.keys.shard_queue(*shard, TaskType::ALL[*task]);
            for chunk in members.chunks(CHUNK) {
                let opt = Some(SetOptions::NX);
                let _: () = pipe
                    .zadd(key.as_str(), opt, None, false, false, chunk.to_vec())
                    .await?;
            }
        }
        let replies: Vec<Value> = pipe.all().await?;
        Ok(replies.iter().filter_map(Value::as_u64).sum())
    }

    /// Removes `members` (as found by [`scan_queue`](Self::scan_queue), card ids or not) from
    /// the queue of `task` on `shard`, and from no other key. Returns how many were there.
    pub async fn remove_members(
        &self,
        shard: u32,
        task: TaskType,
        members: &[String],
    ) -> Result<u64, QueueError> {
        if members.is_empty() {
            return Ok(0);
        }
        let key = self.keys.shard_queue(shard, task);
        let pipe = self.pool.next().pipeline();
        for chunk in members.chunks(CHUNK) {
            let _: () = pipe.zrem(key.as_str(), chunk.to_vec()).await?;
        }
        let replies: Vec<Value> = pipe.all().await?;
        Ok(replies.iter().filter_map(Value::as_u64).sum())
    }
}
