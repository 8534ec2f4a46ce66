//! The decisive lanes `polling:decisive:{type}`: the cards whose next poll of a type may stop
//! or resume them, taken by the dispatch before the rest of a backlog.
//!
//! A lane holds picks, not schedules: a card's one schedule stays its shard queue entry. The
//! handler that reschedules a card whose next poll is decisive also puts it in the lane at the
//! same time ([`reschedule_decisive`](PollingQueueManager::reschedule_decisive), the same
//! pipeline). When a carrier's budget lets only part of the due cards through, the dispatch
//! first pops the lane's due picks and leases those still due in their shard queues
//! (`claim_due.lua`); a pick whose card was since rescheduled later, is in flight or was removed
//! is dropped. So a lane can make a due card come sooner among due cards, never a card come
//! before its time, and losing the lane (a Redis restart, a crash between the two writes)
//! loses only the order: every card is still polled from its shard queue.

use super::score::parse_members;
use crate::{Dequeued, PollingQueueManager, QueueError, RedisKey, scripts};
use domain::{CardId, TaskType};
use fred::prelude::*;
use fred::types::Value;
use std::time::Duration;

impl PollingQueueManager {
    /// Takes up to `n` cards from the decisive lane of `task`: its due picks, earliest first,
    /// leased in their shard queues, and how long until the earliest pick left is due (zero
    /// when `n` picks were due; `None`: the lane is empty). Picks whose card is not due in its
    /// shard queue are dropped (see the module doc), so fewer than `n` cards may come back while
    /// the lane still holds due picks.
    pub async fn take_decisive(&self, task: TaskType, n: usize) -> Result<Dequeued, QueueError> {
        if n == 0 {
            return Ok(Dequeued {
                cards: Vec::new(),
                next_due_in: Some(Duration::ZERO),
            });
        }
        let key = self.keys.render(&RedisKey::Decisive { task });
        let answer: Vec<Value> = scripts::eval(
            &scripts::TAKE_DUE,
            &self.pool,
            key.clone(),
            vec![Value::from(n as i64)],
        )
        .await?;
        let picked = Dequeued::from_answer(&key, answer)?;
        if picked.cards.is_empty() {
            return Ok(picked);
        }
        let codes = self
            .claim_codes(&scripts::CLAIM_DUE, task, &picked.cards)
            .await?;
        Ok(Dequeued {
            cards: codes
                .into_iter()
                .filter_map(|(card, code)| (code == 1).then_some(card))
                .collect(),
            next_due_in: picked.next_due_in,
        })
    }

    /// The earliest `n` picks of the decisive lane of `task`: each card with the time its
    /// decisive poll is due (unix seconds, as its queue score).
    pub async fn decisive_picks(
        &self,
        task: TaskType,
        n: usize,
    ) -> Result<Vec<(CardId, f64)>, QueueError> {
        let key = self.keys.render(&RedisKey::Decisive { task });
        let stop = i64::try_from(n).unwrap_or(i64::MAX).saturating_sub(1);
        if n == 0 {
            return Ok(Vec::new());
        }
        let flat: Vec<(String, f64)> = self
            .pool
            .zrange(key.as_str(), 0, stop, None, false, None, true)
            .await?;
        let (members, scores): (Vec<String>, Vec<f64>) = flat.into_iter().unzip();
        Ok(parse_members(&key, members)?
            .into_iter()
            .zip(scores)
            .collect())
    }

    /// How many picks the decisive lane of `task` holds (due or not).
    pub async fn decisive_len(&self, task: TaskType) -> Result<u64, QueueError> {
        Ok(self
            .pool
            .zcard(self.keys.render(&RedisKey::Decisive { task }))
            .await?)
    }
}
