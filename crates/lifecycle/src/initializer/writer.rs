//! One page of cards -> pipelined variadic `ZADD key NX score id score id ...` commands.
//!
//! No per-card `String`: members and scores are `Value::Integer`, which the protocol encoder
//! writes as decimal bulk strings directly; the key of a (shard, type) is built once per run
//! and shared by reference count.

use crate::LifecycleError;
use domain::{CardMatchFields, TaskType};
use fred::clients::Pipeline;
use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand, Value};
use futures::{StreamExt, TryStreamExt};
use polling_config::ConfigSnapshot;
use polling_queue::Keys;

/// The first score of a card for one task type: `now + hash(card_id, task) % interval`,
/// spreading the first round over one interval instead of a thundering herd. The task type is
/// part of the hash so that the four polls of one card do not all fall due in the same second
/// (they would queue on the card's evaluation lock). Stable across runs and processes
/// (splitmix64).
pub fn first_score(card_id: i64, task: TaskType, interval_secs: u64, now_secs: i64) -> i64 {
    let salt = (task.index() as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    let offset = splitmix64(card_id as u64 ^ salt) % interval_secs.max(1);
    now_secs + offset as i64
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What one page contributed.
#[derive(Debug, Default, Clone)]
pub(crate) struct PageCounts {
    pub(crate) processed: u64,
    pub(crate) unmatched: u64,
    /// Matched cards per shard.
    pub(crate) shards: Vec<u64>,
}

/// Builds the commands of pages; holds the rendered keys for the whole run.
pub(crate) struct Batcher {
    /// `[shard][task]` -> the key as a shared value.
    keys: Vec<[Value; 4]>,
    members_per_command: usize,
}

impl Batcher {
    pub(crate) fn new(keys: &Keys, shard_count: u32, members_per_command: usize) -> Self {
        let keys = (0..shard_count)
            .map(|shard| TaskType::ALL.map(|t| Value::from(keys.shard_queue(shard, t))))
            .collect();
        Self {
            keys,
            members_per_command: members_per_command.max(1),
        }
    }

    /// Matches every card of the page and returns the ZADD NX argument lists (key, `NX`, then
    /// at most `members_per_command` score/member pairs each) and the page's counts.
    pub(crate) fn page(
        &self,
        cards: &[CardMatchFields],
        snapshot: &ConfigSnapshot,
        now_secs: i64,
    ) -> (Vec<Vec<Value>>, PageCounts) {
        let shard_count = self.keys.len() as u32;
        let mut counts = PageCounts {
            processed: cards.len() as u64,
            shards: vec![0; self.keys.len()],
            ..PageCounts::default()
        };
        let mut open: Vec<[Vec<Value>; 4]> =
            (0..self.keys.len()).map(|_| Default::default()).collect();
        let mut done = Vec::new();
        for card in cards {
            let Some(matched) = snapshot.match_config(card) else {
                counts.unmatched += 1;
                continue;
            };
            let shard = card.id.shard(shard_count) as usize;
            counts.shards[shard] += 1;
            for (task, interval) in matched.scheduled() {
                let cmd = &mut open[shard][task.index()];
                if cmd.is_empty() {
                    cmd.reserve_exact(2 + 2 * self.members_per_command);
                    cmd.push(self.keys[shard][task.index()].clone());
                    cmd.push(Value::from_static_str("NX"));
                }
                let id = card.id.get();
                cmd.push(Value::Integer(first_score(
                    id,
                    task,
                    interval.as_secs(),
                    now_secs,
                )));
                cmd.push(Value::Integer(id));
                if cmd.len() == 2 + 2 * self.members_per_command {
                    done.push(std::mem::take(cmd));
                }
            }
        }
        done.extend(open.into_iter().flatten().filter(|c| !c.is_empty()));
        (done, counts)
    }
}

/// Sends the commands as pipelines of `per_pipeline` commands, `in_flight` pipelines at a time
/// over the pool's connections. Returns how many members were new (not already queued).
pub(crate) async fn write(
    pool: Pool,
    commands: Vec<Vec<Value>>,
    per_pipeline: usize,
    in_flight: usize,
) -> Result<u64, LifecycleError> {
    let mut commands = commands.into_iter().peekable();
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
        .map(|cmds| send(pool.next().pipeline(), cmds))
        .buffer_unordered(in_flight.max(1))
        .try_fold(0u64, |sum, added| async move { Ok(sum + added) })
        .await
}

async fn send(pipe: Pipeline<Client>, commands: Vec<Vec<Value>>) -> Result<u64, LifecycleError> {
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

    #[test]
    fn first_score_is_stable_and_within_one_interval() {
        for id in [1_i64, 2, 1000, 9_999_999] {
            let s = first_score(id, TaskType::Carddata, 3600, 1_000);
            assert!((1_000..1_000 + 3600).contains(&s));
            assert_eq!(s, first_score(id, TaskType::Carddata, 3600, 1_000));
        }
        assert_eq!(first_score(5, TaskType::Realname, 0, 7), 7);
    }

    #[test]
    fn first_scores_spread_over_the_interval() {
        let mut buckets = [0u32; 10];
        for id in 1..=100_000 {
            buckets[(first_score(id, TaskType::Package, 1000, 0) / 100) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|&n| (9_000..11_000).contains(&n)),
            "{buckets:?}"
        );
    }
}
