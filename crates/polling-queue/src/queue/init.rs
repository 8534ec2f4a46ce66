//! The initializer's writes: the first entries of the shard queues (`ZADD NX` in bulk) and the
//! `polling:init:progress` hash. The initializer decides what to write (matching, first
//! scores, the meaning of the progress fields); this module is the only writer of the keys.
//!
//! Bulk entries are kept as (score, card) integer pairs per queue key (16 bytes a member). On a
//! single Redis server they go out as pre-encoded RESP on a connection of their own
//! (`bulk_resp`, the way `redis-cli --pipe` loads a file); on a Redis Cluster or behind
//! Sentinel as fred pipelines of `ZADD NX` (members and scores as `Value::Integer`, the key of
//! a (shard, type) rendered once per writer), several in flight over the pool's connections.

use super::{bulk_resp, wake};
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
    /// For the wake announced after each write (every dispatch loop, every shard).
    keys: Keys,
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
    /// `[shard * 4 + task]` -> the (score, card) pairs of that queue.
    pairs: Vec<Vec<(i64, i64)>>,
    /// Whether every queue's pairs are in score order (see [`FirstEntries::sort_by_score`]).
    sorted: bool,
}

impl FirstEntries {
    /// Queues `card` for `task` at `score` (unix seconds) unless it is already queued.
    pub fn add(&mut self, card: CardId, task: TaskType, score: i64) {
        let shard = card.shard(self.shard_keys.len() as u32) as usize;
        if let Some(queue) = self.pairs.get_mut(shard * 4 + task.index()) {
            queue.push((score, card.get()));
            self.sorted = false;
        }
    }

    /// The commands built so far.
    pub fn commands(&self) -> usize {
        self.pairs
            .iter()
            .map(|p| p.len().div_ceil(self.members_per_command))
            .sum()
    }

    /// Orders each queue's pairs by score. Redis inserts a run of ascending scores into a
    /// sorted set along neighbouring skiplist nodes, still in the CPU's cache from the insert
    /// before; a run in card order lands all over the set. (`just bench`, initializer at 2M
    /// cards: Redis spent 11.0 s of CPU on the entries in card order, `redis-cli --pipe` of
    /// the same commands 7.3 s.) [`InitWriter::add_first_entries`] sorts what is not sorted
    /// yet; a caller sorts earlier to keep the sorting out of the write.
    pub fn sort_by_score(&mut self) {
        if !self.sorted {
            for pairs in &mut self.pairs {
                pairs.sort_unstable();
            }
            self.sorted = true;
        }
    }

    /// Moves `other`'s entries into these (same writer): one write of several pages gives
    /// Redis longer runs of one queue. Two sorted sets of entries stay sorted (a stable sort
    /// of two sorted runs is one linear merge).
    pub fn append(&mut self, mut other: FirstEntries) {
        let sorted = self.sorted && other.sorted;
        for (mine, theirs) in self.pairs.iter_mut().zip(other.pairs.iter_mut()) {
            mine.append(theirs);
            if sorted {
                mine.sort();
            }
        }
        self.sorted = sorted;
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
            keys: keys.clone(),
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
            sorted: true,
        }
    }

    /// Sends the entries: on a single Redis server streamed over one connection of their own;
    /// otherwise as pipelines of `per_pipeline` commands, `in_flight` pipelines at a time over
    /// the pool's connections. Returns how many members were new (not already queued).
    pub async fn add_first_entries(
        &self,
        mut entries: FirstEntries,
        per_pipeline: usize,
        in_flight: usize,
    ) -> Result<u64, QueueError> {
        entries.sort_by_score();
        if let Some(target) = &self.direct {
            let commands: Vec<bulk_resp::Command<'_>> = entries
                .chunks()
                .map(|(key, pairs)| bulk_resp::Command {
                    key: key.as_bytes().unwrap_or_default(),
                    pairs,
                })
                .collect();
            let added = bulk_resp::zadd_nx(target, &commands).await?;
            self.wake_all().await;
            return Ok(added);
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
        let added = futures::stream::iter(pipelines)
            .map(|cmds| send(self.pool.next().pipeline(), cmds))
            .buffer_unordered(in_flight.max(1))
            .try_fold(0u64, |sum, added| async move { Ok(sum + added) })
            .await?;
        self.wake_all().await;
        Ok(added)
    }

    /// First entries are due from now on: every loop asks every shard again.
    async fn wake_all(&self) {
        let messages = TaskType::ALL.into_iter().map(wake::all_message).collect();
        wake::announce(&self.pool, &self.keys, messages).await;
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

    fn entries() -> FirstEntries {
        let keys = Keys::new("t:");
        FirstEntries {
            shard_keys: Arc::new(vec![
                TaskType::ALL.map(|t| Value::from(keys.shard_queue(0, t))),
            ]),
            members_per_command: 2,
            pairs: vec![Vec::new(); 4],
            sorted: true,
        }
    }

    fn scores(e: &FirstEntries) -> Vec<Vec<i64>> {
        e.chunks()
            .map(|(_, pairs)| pairs.iter().map(|(score, _)| *score).collect())
            .collect()
    }

    #[test]
    fn entries_go_out_in_score_order_and_merged_pages_stay_sorted() {
        let mut page = entries();
        for (card, score) in [(1, 30), (2, 10), (3, 20)] {
            page.add(CardId(card), TaskType::Carddata, score);
        }
        assert!(!page.sorted);
        page.sort_by_score();
        assert_eq!(scores(&page), vec![vec![10, 20], vec![30]]);

        let mut next = entries();
        for (card, score) in [(4, 25), (5, 5)] {
            next.add(CardId(card), TaskType::Carddata, score);
        }
        next.sort_by_score();
        page.append(next);
        assert!(page.sorted);
        assert_eq!(scores(&page), vec![vec![5, 10], vec![20, 25], vec![30]]);

        // An unsorted page makes the merge unsorted until sorted again.
        let mut late = entries();
        late.add(CardId(6), TaskType::Carddata, 1);
        late.add(CardId(7), TaskType::Carddata, 0);
        page.append(late);
        assert!(!page.sorted);
        page.sort_by_score();
        assert_eq!(scores(&page)[0], vec![0, 1]);
    }

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
