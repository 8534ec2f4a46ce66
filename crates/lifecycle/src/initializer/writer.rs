//! One page of cards -> first queue entries (pipelined variadic `ZADD key NX score id ...`,
//! built and sent by `polling-queue`'s `InitWriter`, the one writer of the `polling:*` keys).

use crate::LifecycleError;
use domain::{CardMatchFields, TaskType};
use polling_config::ConfigSnapshot;
use polling_queue::{FirstEntries, InitWriter};

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

impl PageCounts {
    /// Adds another page's counts to these.
    pub(crate) fn merge(&mut self, other: &PageCounts) {
        self.processed += other.processed;
        self.unmatched += other.unmatched;
        for (sum, n) in self.shards.iter_mut().zip(&other.shards) {
            *sum += n;
        }
    }
}

/// Matches pages of cards into first queue entries; `polling-queue`'s [`InitWriter`] builds
/// and sends the commands.
pub(crate) struct Batcher {
    writer: InitWriter,
    shard_count: u32,
    members_per_command: usize,
}

impl Batcher {
    pub(crate) fn new(writer: InitWriter, shard_count: u32, members_per_command: usize) -> Self {
        Self {
            writer,
            shard_count: shard_count.max(1),
            members_per_command,
        }
    }

    /// Matches every card of the page and returns its first entries (`ZADD NX`: a card
    /// already queued keeps its score), in score order, and the page's counts.
    pub(crate) fn page(
        &self,
        cards: &[CardMatchFields],
        snapshot: &ConfigSnapshot,
        now_secs: i64,
    ) -> (FirstEntries, PageCounts) {
        let mut counts = PageCounts {
            processed: cards.len() as u64,
            shards: vec![0; self.shard_count as usize],
            ..PageCounts::default()
        };
        let mut entries = self.writer.entries(self.members_per_command);
        for card in cards {
            let Some(matched) = snapshot.match_config(card) else {
                counts.unmatched += 1;
                continue;
            };
            if let Some(n) = counts
                .shards
                .get_mut(card.id.shard(self.shard_count) as usize)
            {
                *n += 1;
            }
            for (task, interval) in matched.scheduled() {
                let score = first_score(card.id.get(), task, interval.as_secs(), now_secs);
                entries.add(card.id, task, score);
            }
        }
        // Sorted here, while the previous write is still running, not in the write.
        entries.sort_by_score();
        (entries, counts)
    }
}

/// Sends one page's entries: pipelines of `per_pipeline` commands, `in_flight` at a time.
/// Returns how many members were new (not already queued).
pub(crate) async fn write(
    writer: InitWriter,
    entries: FirstEntries,
    per_pipeline: usize,
    in_flight: usize,
) -> Result<u64, LifecycleError> {
    Ok(writer
        .add_first_entries(entries, per_pipeline, in_flight)
        .await?)
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
