//! The initializer's writes: the first entries of the shard queues (`ZADD NX` in bulk) and the
//! `polling:init:progress` hash. The initializer decides what to write (matching, first
//! scores, the meaning of the progress fields); this module is the only writer of the keys.
//!
//! Bulk entries are built without a per-card `String`: members and scores are
//! `Value::Integer`, which the protocol encoder writes as decimal bulk strings directly, and the
//! key of a (shard, type) is rendered once per writer and shared by reference count. The
//! commands go out as pipelines, several in flight over the pool's connections.

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
}

/// The `ZADD key NX score id ...` commands of one page of cards, at most `members_per_command`
/// members a command.
#[derive(Debug)]
pub struct FirstEntries {
    shard_keys: Arc<Vec<[Value; 4]>>,
    members_per_command: usize,
    open: Vec<[Vec<Value>; 4]>,
    done: Vec<Vec<Value>>,
}

impl FirstEntries {
    /// Queues `card` for `task` at `score` (unix seconds) unless it is already queued.
    pub fn add(&mut self, card: CardId, task: TaskType, score: i64) {
        let shard = card.shard(self.shard_keys.len() as u32) as usize;
        let (Some(open), Some(keys)) = (self.open.get_mut(shard), self.shard_keys.get(shard))
        else {
            return;
        };
        let cmd = &mut open[task.index()];
        if cmd.is_empty() {
            cmd.reserve_exact(2 + 2 * self.members_per_command);
            cmd.push(keys[task.index()].clone());
            cmd.push(Value::from_static_str("NX"));
        }
        cmd.push(Value::Integer(score));
        cmd.push(Value::Integer(card.get()));
        if cmd.len() == 2 + 2 * self.members_per_command {
            self.done.push(std::mem::take(cmd));
        }
    }

    /// The commands built so far.
    pub fn commands(&self) -> usize {
        self.done.len() + self.open.iter().flatten().filter(|c| !c.is_empty()).count()
    }

    fn into_commands(self) -> Vec<Vec<Value>> {
        let mut done = self.done;
        done.extend(self.open.into_iter().flatten().filter(|c| !c.is_empty()));
        done
    }
}

impl InitWriter {
    pub fn new(pool: Pool, keys: &Keys, shard_count: u32) -> Self {
        let shard_keys = (0..shard_count.max(1))
            .map(|shard| TaskType::ALL.map(|t| Value::from(keys.shard_queue(shard, t))))
            .collect();
        InitWriter {
            pool,
            progress_key: keys.render(&RedisKey::InitProgress),
            shard_keys: Arc::new(shard_keys),
        }
    }

    /// An empty page of first entries.
    pub fn entries(&self, members_per_command: usize) -> FirstEntries {
        FirstEntries {
            shard_keys: self.shard_keys.clone(),
            members_per_command: members_per_command.max(1),
            open: (0..self.shard_keys.len())
                .map(|_| Default::default())
                .collect(),
            done: Vec::new(),
        }
    }

    /// Sends the entries as pipelines of `per_pipeline` commands, `in_flight` pipelines at a
    /// time over the pool's connections. Returns how many members were new (not already
    /// queued).
    pub async fn add_first_entries(
        &self,
        entries: FirstEntries,
        per_pipeline: usize,
        in_flight: usize,
    ) -> Result<u64, QueueError> {
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

async fn send(pipe: Pipeline<Client>, commands: Vec<Vec<Value>>) -> Result<u64, QueueError> {
    let zadd = CustomCommand::new_static("ZADD", ClusterHash::FirstKey, false);
    for args in commands {
        let _: () = pipe.custom(zadd.clone(), args).await?;
    }
    let added: Vec<i64> = pipe.all().await?;
    Ok(added.into_iter().map(|n| n.max(0) as u64).sum())
}
