//! How one round of a dispatch loop spreads the pool's free room over the shards.

use domain::{CardId, TaskType};
use polling_queue::PollingQueueManager;

/// Fewest cards asked of one shard in a round while the room allows: a dequeue is one round
/// trip, so slicing a small room over every shard would waste them.
pub(crate) const MIN_PER_SHARD: usize = 64;

/// Dequeues the planned number of cards from each shard at once (at most `batch` a shard).
pub(crate) async fn dequeue_shards(
    queue: &PollingQueueManager,
    task: TaskType,
    plan: Vec<(u32, usize)>,
    batch: usize,
) -> Vec<CardId> {
    let calls = plan.into_iter().map(|(shard, n)| async move {
        match queue.dequeue_ready(shard, task, n.min(batch.max(1))).await {
            Ok(cards) => cards,
            Err(e) => {
                tracing::warn!(shard, task = %task, error = %e, "dequeue failed; shard skipped this round");
                Vec::new()
            }
        }
    });
    futures::future::join_all(calls)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// `room` split over as many shards as give each at least [`MIN_PER_SHARD`] (all of them for a
/// large room), starting at shard `rotate`: the caller advances `rotate` by the shards asked,
/// so consecutive rounds walk every shard in turn.
pub(crate) fn shares(room: usize, shards: u32, rotate: u32) -> Vec<(u32, usize)> {
    let s = shards.max(1) as usize;
    let used = room.div_ceil(MIN_PER_SHARD).clamp(1, s);
    let (base, extra) = (room / used, room % used);
    (0..used)
        .map(|i| {
            (
                ((rotate as usize + i) % s) as u32,
                base + usize::from(i < extra),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Up to `n` cards of the manual list, each leased in its shard first so that no other node
/// polls it at the same time; cards already in flight elsewhere are left to that poll.
pub(crate) async fn take_manual(
    queue: &PollingQueueManager,
    task: TaskType,
    n: usize,
) -> Vec<CardId> {
    let taken = match queue.take_manual(task, n).await {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(task = %task, error = %e, "manual list unavailable");
            return Vec::new();
        }
    };
    match queue.claim(task, &taken).await {
        Ok(claimed) => claimed,
        Err(e) => {
            tracing::warn!(task = %task, error = %e, cards = taken.len(),
                "cannot lease the manually triggered cards; polling them unleased");
            taken
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shares;

    #[test]
    fn room_is_split_exactly_over_enough_shards_and_rotates() {
        // A large room goes to every shard.
        let s = shares(16 * 64 + 35, 16, 0);
        assert_eq!(s.iter().map(|(_, n)| n).sum::<usize>(), 16 * 64 + 35);
        assert_eq!(s.len(), 16);
        assert_eq!(s[0], (0, 67));
        assert_eq!(s[3], (3, 66));
        // A small room goes to a few shards, at least 64 cards each, from `rotate` on.
        let small = shares(200, 16, 14);
        assert_eq!(small, vec![(14, 50), (15, 50), (0, 50), (1, 50)]);
        assert_eq!(shares(3, 16, 5), vec![(5, 3)]);
        assert!(shares(0, 16, 0).is_empty());
        assert_eq!(shares(7, 1, 9), vec![(0, 7)]);
    }
}
