//! The initializer's writes: the first entries of the shard queues (`ZADD NX` in bulk) and the
//! `polling:init:progress` hash. The initializer decides what to write (matching, first
//! scores, the meaning of the progress fields); this module is the only writer of the keys.
//!
//! Bulk entries are kept as (score, card) integer pairs per queue key (16 bytes a member). On a
//! single Redis server they go out as pre-encoded RESP on a connection of their own
//! (`bulk_resp`, the way `redis-cli --pipe` loads a file); on a Redis Cluster or behind
//! Sentinel as fred pipelines of `ZADD NX` (members and scores as `Value::Integer`, the key of
//! a (shard, type) rendered once per writer), several in flight over the pool's connections.

use super::bulk_resp;
use crate::{Keys, QueueError, RedisKey};
use domain::{CardId, TaskType};
use fred::clients::{Pipeline, Pool};
use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand, Value};
use futures::{StreamExt, TryStreamExt};
use std::collections::HashMap;
use std::sync::Arc;

/// Writes of the card initializer. Cheap to clone.
#[derive(Debug, Clone)]
pub struct InitWriter {
    pool: Pool,
    progress_key: String,
    /// `[shard][task]` -> the rendered key as a shared value.
    shard_keys: Arc<Vec<[Value; 4]>>,
    /// The single server to stream pre-encoded commands to (`None`: a cluster, Sentinel).
    direct: Option<bulk_resp::Target>,
    /// One canary key per hash slot that holds a shard queue (see [`canary_keys`]).
    canaries: Arc<Vec<String>>,
}

/// The `ZADD key NX score id ...` commands of one page of cards, at most `members_per_command`
/// members a command.
#[derive(Debug)]
pub struct FirstEntries {
    shard_keys: Arc<Vec<[Value; 4]>>,
    members_per_command: usize,
    /// `[shard * 4 + task]` -> the (score, card) pairs of that queue, in the order added.
    pairs: Vec<Vec<(i64, i64)>>,
}

impl FirstEntries {
    /// Queues `card` for `task` at `score` (unix seconds) unless it is already queued.
    pub fn add(&mut self, card: CardId, task: TaskType, score: i64) {
        let shard = card.shard(self.shard_keys.len() as u32) as usize;
        if let Some(queue) = self.pairs.get_mut(shard * 4 + task.index()) {
            queue.push((score, card.get()));
        }
    }

    /// The commands built so far.
    pub fn commands(&self) -> usize {
        self.pairs
            .iter()
            .map(|p| p.len().div_ceil(self.members_per_command))
            .sum()
    }

    /// `(queue key, pairs)` of each command, queue by queue.
    fn chunks(&self) -> impl Iterator<Item = (&Value, &[(i64, i64)])> + '_ {
        self.pairs
            .iter()
            .enumerate()
            .flat_map(move |(queue, pairs)| {
                let key = &self.shard_keys[queue / 4][queue % 4];
                pairs
                    .chunks(self.members_per_command)
                    .map(move |chunk| (key, chunk))
            })
    }

    /// The commands as fred arguments.
    fn into_commands(self) -> Vec<Vec<Value>> {
        self.chunks()
            .map(|(key, chunk)| {
                let mut args = Vec::with_capacity(2 + 2 * chunk.len());
                args.push(key.clone());
                args.push(Value::from_static_str("NX"));
                for (score, card) in chunk {
                    args.push(Value::Integer(*score));
                    args.push(Value::Integer(*card));
                }
                args
            })
            .collect()
    }
}

impl InitWriter {
    pub fn new(pool: Pool, keys: &Keys, shard_count: u32) -> Self {
        let shard_keys = (0..shard_count.max(1))
            .map(|shard| TaskType::ALL.map(|t| Value::from(keys.shard_queue(shard, t))))
            .collect();
        let direct = bulk_resp::Target::of(&pool.next().client_config());
        InitWriter {
            pool,
            progress_key: keys.render(&RedisKey::InitProgress),
            shard_keys: Arc::new(shard_keys),
            direct,
            canaries: Arc::new(canary_keys(keys, shard_count.max(1))),
        }
    }

    /// Writes every canary (value: `run`, e.g. the run's start time), one pipeline of one-key
    /// `SET`s. A completed run writes them before it records itself completed.
    pub async fn write_canaries(&self, run: &str) -> Result<(), QueueError> {
        let pipe = self.pool.next().pipeline();
        for key in self.canaries.iter() {
            let _: () = pipe.set(key.as_str(), run, None, None, false).await?;
        }
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }

    /// How many canaries are gone, of how many: one pipeline of one-key `EXISTS`.
    pub async fn missing_canaries(&self) -> Result<(usize, usize), QueueError> {
        let pipe = self.pool.next().pipeline();
        for key in self.canaries.iter() {
            let _: () = pipe.exists(key.as_str()).await?;
        }
        let found: Vec<i64> = pipe.all().await?;
        let missing = found.iter().filter(|n| **n == 0).count();
        Ok((missing, self.canaries.len()))
    }

    /// An empty page of first entries.
    pub fn entries(&self, members_per_command: usize) -> FirstEntries {
        FirstEntries {
            shard_keys: self.shard_keys.clone(),
            members_per_command: members_per_command.max(1),
            pairs: vec![Vec::new(); 4 * self.shard_keys.len()],
        }
    }

    /// Sends the entries: on a single Redis server streamed over one connection of their own;
    /// otherwise as pipelines of `per_pipeline` commands, `in_flight` pipelines at a time over
    /// the pool's connections. Returns how many members were new (not already queued).
    pub async fn add_first_entries(
        &self,
        entries: FirstEntries,
        per_pipeline: usize,
        in_flight: usize,
    ) -> Result<u64, QueueError> {
        if let Some(target) = &self.direct {
            let commands: Vec<bulk_resp::Command<'_>> = entries
                .chunks()
                .map(|(key, pairs)| bulk_resp::Command {
                    key: key.as_bytes().unwrap_or_default(),
                    pairs,
                })
                .collect();
            return Ok(bulk_resp::zadd_nx(target, &commands).await?);
        }
        let mut commands = entries.into_commands().into_iter().peekable();
        let mut pipelines = Vec::new();
        while commands.peek().is_some() {
            pipelines.push(
                commands
                    .by_ref()
                    .take(per_pipeline.max(1))
                    .collect::<Vec<_>>(),
            );
        }
        futures::stream::iter(pipelines)
            .map(|cmds| send(self.pool.next().pipeline(), cmds))
            .buffer_unordered(in_flight.max(1))
            .try_fold(0u64, |sum, added| async move { Ok(sum + added) })
            .await
    }

    /// The progress hash as stored (empty: never written).
    pub async fn read_progress(&self) -> Result<HashMap<String, String>, QueueError> {
        Ok(self.pool.hgetall(self.progress_key.as_str()).await?)
    }

    /// Replaces the progress hash with `fields`, atomically (MULTI).
    pub async fn replace_progress(&self, fields: Vec<(String, String)>) -> Result<(), QueueError> {
        let key = self.progress_key.as_str();
        let trx = self.pool.next().multi();
        let _: () = trx.del(key).await?;
        let _: () = trx.hset(key, fields).await?;
        let _: Vec<Value> = trx.exec(true).await?;
        Ok(())
    }

    /// Sets `fields` of the progress hash, leaving the others.
    pub async fn update_progress(&self, fields: Vec<(String, String)>) -> Result<(), QueueError> {
        if fields.is_empty() {
            return Ok(());
        }
        let _: () = self.pool.hset(self.progress_key.as_str(), fields).await?;
        Ok(())
    }
}

/// The canary keys of the shard queues: for each distinct hash slot of a queue key, a key
/// `polling:init:canary:{tag}` in that same slot (the smallest such `tag`). On a cluster a
/// node that restarts empty or fails over to a replica that held nothing loses its queues
/// and, with them, exactly the canaries of their slots; the progress hash may well live on
/// another node and survive. Resharding moves a canary with its slot. On one server the
/// canaries go with everything else, which the progress hash already tells.
fn canary_keys(keys: &Keys, shard_count: u32) -> Vec<String> {
    use fred::util::redis_keyslot;
    let mut slots: Vec<u16> = (0..shard_count)
        .flat_map(|shard| {
            TaskType::ALL.map(|t| redis_keyslot(keys.shard_queue(shard, t).as_bytes()))
        })
        .collect();
    slots.sort_unstable();
    slots.dedup();
    // The tag's own slot decides the key's (CRC16 of the text between the braces): walk the
    // integers until every wanted slot has one. ~16,384 × H(n) tries, a few ms for 256 slots.
    let mut tags: HashMap<u16, u32> = HashMap::with_capacity(slots.len());
    let mut tag = 0u32;
    while tags.len() < slots.len() {
        let slot = redis_keyslot(tag.to_string().as_bytes());
        if slots.binary_search(&slot).is_ok() {
            tags.entry(slot).or_insert(tag);
        }
        tag += 1;
    }
    slots
        .iter()
        .map(|slot| keys.render(&RedisKey::InitCanary { tag: tags[slot] }))
        .collect()
}

async fn send(pipe: Pipeline<Client>, commands: Vec<Vec<Value>>) -> Result<u64, QueueError> {
    let zadd = CustomCommand::new_static("ZADD", ClusterHash::FirstKey, false);
    for args in commands {
        let _: () = pipe.custom(zadd.clone(), args).await?;
    }
    let added: Vec<i64> = pipe.all().await?;
    Ok(added.into_iter().map(|n| n.max(0) as u64).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fred::util::redis_keyslot;
    use std::collections::BTreeSet;

    #[test]
    fn each_shard_queue_slot_has_exactly_one_canary_in_it() {
        for prefix in ["", "t1767225600_3fa2:"] {
            let keys = Keys::new(prefix);
            let queue_slots: BTreeSet<u16> = (0..64)
                .flat_map(|shard| {
                    TaskType::ALL.map(|t| redis_keyslot(keys.shard_queue(shard, t).as_bytes()))
                })
                .collect();
            let canaries = canary_keys(&keys, 64);
            let canary_slots: BTreeSet<u16> = canaries
                .iter()
                .map(|k| redis_keyslot(k.as_bytes()))
                .collect();
            assert_eq!(canary_slots, queue_slots, "prefix {prefix:?}");
            assert_eq!(canaries.len(), queue_slots.len(), "one canary a slot");
            assert!(
                canaries
                    .iter()
                    .all(|k| k.starts_with(&format!("{prefix}polling:init:canary:{{"))),
                "{canaries:?}"
            );
        }
    }
}
