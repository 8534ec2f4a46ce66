//! How one round of a dispatch loop spreads the pool's free room over the shards.

use domain::{CardId, TaskType};
use polling_queue::{Dequeued, PollingQueueManager};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::Instant;

/// Fewest cards asked of one shard in a round while the room allows: a dequeue is one round
/// trip, so slicing a small room over every shard would waste them.
pub(crate) const MIN_PER_SHARD: usize = 64;

/// What one shard answered in a round: the cards taken, and when to ask it next.
pub(crate) struct Answer {
    pub(crate) shard: u32,
    pub(crate) asked: usize,
    /// `None`: the dequeue failed (logged); asked again after a tick.
    pub(crate) dequeued: Option<Dequeued>,
}

/// Dequeues the planned number of cards from each shard at once (at most `batch` a shard).
pub(crate) async fn dequeue_shards(
    queue: &PollingQueueManager,
    task: TaskType,
    plan: Vec<(u32, usize)>,
    batch: usize,
) -> Vec<Answer> {
    let calls = plan.into_iter().map(|(shard, n)| async move {
        let asked = n.min(batch.max(1));
        let dequeued = match queue.dequeue(shard, task, asked).await {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::warn!(shard, task = %task, error = %e, "dequeue failed; shard skipped this round");
                None
            }
        };
        Answer {
            shard,
            asked,
            dequeued,
        }
    });
    futures::future::join_all(calls).await
}

/// When each shard of one task type is asked next. A shard whose dequeue answered that its
/// earliest entry is due in 40 s is not asked before then (nor sooner than a tick after an
/// answer that left nothing due, nor later than the horizon), unless a writer wakes it.
pub(crate) struct AskPlan {
    next: Vec<Instant>,
    tick: Duration,
    horizon: Duration,
}

impl AskPlan {
    /// Every shard asked at once; `horizon`: the longest a shard goes unasked.
    pub(crate) fn new(shards: u32, tick: Duration, horizon: Duration, now: Instant) -> Self {
        AskPlan {
            next: vec![now; shards.max(1) as usize],
            tick,
            horizon: horizon.max(tick),
        }
    }

    /// The shards to ask at `now`, from `rotate` on.
    pub(crate) fn ready(&self, now: Instant, rotate: u32) -> Vec<u32> {
        let n = self.next.len();
        (0..n)
            .map(|i| ((rotate as usize + i) % n) as u32)
            .filter(|s| self.next[*s as usize] <= now)
            .collect()
    }

    /// The earliest time a shard is to be asked.
    pub(crate) fn earliest(&self) -> Instant {
        self.next.iter().copied().min().unwrap_or_else(Instant::now)
    }

    /// Asks `shards` (every shard: `None`) at once.
    pub(crate) fn wake(&mut self, shards: Option<&BTreeSet<u32>>, now: Instant) {
        match shards {
            None => self.next.iter_mut().for_each(|t| *t = now),
            Some(shards) => {
                for s in shards {
                    if let Some(t) = self.next.get_mut(*s as usize) {
                        *t = now;
                    }
                }
            }
        }
    }

    /// Between half the horizon and the horizon, by shard (never under a tick).
    fn spread(&self, shard: u32) -> Duration {
        let n = self.next.len() as u32;
        let half = self.horizon / 2;
        (half + half * (shard % n) / n).max(self.tick)
    }

    /// Records a shard's answer at `now`.
    pub(crate) fn answered(&mut self, answer: &Answer, now: Instant) {
        let wait = match &answer.dequeued {
            None => self.tick,
            // A full batch: more may be due.
            Some(d) if d.cards.len() >= answer.asked => Duration::ZERO,
            Some(d) => match d.next_due_in {
                Some(due) if due < self.horizon => due.max(self.tick),
                // Nothing due within the horizon: ask again at the horizon, spread over its
                // second half by shard so that the shards of an idle node are not asked at once.
                _ => self.spread(answer.shard),
            },
        };
        if let Some(t) = self.next.get_mut(answer.shard as usize) {
            *t = now + wait;
        }
    }
}

/// `room` split over as many of the `ready` shards (in their order) as give each at least
/// [`MIN_PER_SHARD`] (all of them for a large room): the caller advances its rotation by the
/// shards asked, so consecutive rounds walk every shard in turn.
pub(crate) fn shares(room: usize, ready: &[u32]) -> Vec<(u32, usize)> {
    if ready.is_empty() {
        return Vec::new();
    }
    let used = room.div_ceil(MIN_PER_SHARD).clamp(1, ready.len());
    let (base, extra) = (room / used, room % used);
    ready[..used]
        .iter()
        .enumerate()
        .map(|(i, shard)| (*shard, base + usize::from(i < extra)))
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

/// Up to `n` due cards of the decisive lane of `task`, leased, and when to ask the lane again:
/// at once when it had more due; else when its earliest pick is due, but at most `recheck`
/// (the loop's tick) from `now`, since a pick written since may be due sooner. One question a
/// tick per busy loop. No cards when Redis refuses: the shard queues still hold every card.
pub(crate) async fn take_decisive(
    queue: &PollingQueueManager,
    task: TaskType,
    n: usize,
    now: Instant,
    recheck: Duration,
) -> (Vec<CardId>, Instant) {
    match queue.take_decisive(task, n).await {
        Ok(taken) => {
            let wait = taken.next_due_in.map_or(recheck, |d| d.min(recheck));
            (taken.cards, now + wait)
        }
        Err(e) => {
            tracing::warn!(task = %task, error = %e, "decisive lane unavailable; the shard queues serve its cards in due order");
            (Vec::new(), now + recheck)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_split_exactly_over_enough_ready_shards() {
        let all: Vec<u32> = (0..16).collect();
        // A large room goes to every shard.
        let s = shares(16 * 64 + 35, &all);
        assert_eq!(s.iter().map(|(_, n)| n).sum::<usize>(), 16 * 64 + 35);
        assert_eq!(s.len(), 16);
        assert_eq!(s[0], (0, 67));
        assert_eq!(s[3], (3, 66));
        // A small room goes to a few shards, at least 64 cards each, in the order given.
        let rotated = [14, 15, 0, 1, 2, 3];
        assert_eq!(
            shares(200, &rotated),
            vec![(14, 50), (15, 50), (0, 50), (1, 50)]
        );
        assert_eq!(shares(3, &[5, 6]), vec![(5, 3)]);
        assert!(shares(0, &all).is_empty());
        assert!(shares(10, &[]).is_empty());
    }

    fn answer(shard: u32, asked: usize, taken: usize, next_ms: Option<u64>) -> Answer {
        Answer {
            shard,
            asked,
            dequeued: Some(Dequeued {
                cards: (0..taken as i64).map(domain::CardId).collect(),
                next_due_in: next_ms.map(Duration::from_millis),
            }),
        }
    }

    #[test]
    fn a_shard_is_asked_again_when_its_earliest_entry_is_due() {
        let (tick, horizon) = (Duration::from_millis(100), Duration::from_secs(30));
        let t0 = Instant::now();
        let mut plan = AskPlan::new(4, tick, horizon, t0);
        assert_eq!(plan.ready(t0, 2), vec![2, 3, 0, 1]);
        // Due in 40 s or empty: the horizon's second half, by shard. Due in 5 ms: a tick. Full
        // batch: now.
        plan.answered(&answer(0, 10, 3, Some(40_000)), t0);
        plan.answered(&answer(1, 10, 0, None), t0);
        plan.answered(&answer(2, 10, 0, Some(5)), t0);
        plan.answered(&answer(3, 10, 10, Some(0)), t0);
        assert_eq!(plan.ready(t0, 0), vec![3]);
        assert_eq!(plan.ready(t0 + tick, 0), vec![2, 3]);
        assert_eq!(plan.earliest(), t0);
        plan.answered(&answer(3, 10, 2, Some(1_500)), t0);
        assert_eq!(plan.earliest(), t0 + tick);
        assert_eq!(plan.ready(t0 + Duration::from_millis(1_500), 0), vec![2, 3]);
        assert_eq!(plan.ready(t0 + horizon / 2, 0), vec![0, 2, 3]);
        assert_eq!(plan.ready(t0 + horizon * 5 / 8, 0), vec![0, 1, 2, 3]);
        // A failed dequeue: again after a tick. A wake: at once.
        plan.answered(
            &Answer {
                shard: 1,
                asked: 10,
                dequeued: None,
            },
            t0,
        );
        assert_eq!(plan.ready(t0 + tick, 0), vec![1, 2]);
        let mut woken = BTreeSet::new();
        woken.insert(0);
        plan.wake(Some(&woken), t0);
        assert_eq!(plan.ready(t0, 0), vec![0]);
        plan.wake(None, t0);
        assert_eq!(plan.ready(t0, 1), vec![1, 2, 3, 0]);
    }
}
