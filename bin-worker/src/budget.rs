//! The dispatch loop's view of the carrier budget: the shared GCRA buckets of the carriers
//! called lately, the default gateway's and the configured carriers' (whose adapters reserve
//! from the same buckets), a free call counting as many cards as one call of the task carries.
//!
//! The task types that query the carrier share its budget: while more than one of them has
//! cards due (their loops ask for room), each is offered an equal share of the free calls, so
//! that no type starves another; a share a type does not use stays free for the others' next
//! question. Within its share each type takes its decisive cards first (the cards whose poll
//! may stop or resume them: `polling:decisive:{type}`), then the rest in due order.

use domain::TaskType;
use gateway::HttpGateway;
use gateway::carriers::CarrierRouter;
use polling_queue::RedisRateLimiter;
use scheduler::DispatchBudget;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How far ahead the dispatch lets the budget be booked: the commands' burst allowance, so a
/// stop or start passes every query the dispatch booked (docs/decisions.md, "A carrier quota
/// below demand").
pub(crate) const HORIZON: Duration = RedisRateLimiter::DEFAULT_BURST_WINDOW;

/// A configured carrier not called for this long no longer paces the dispatch.
const PACED_FOR: Duration = Duration::from_secs(60);

/// A task type that asked for room within this long has cards due: it shares the budget.
/// Above `scheduler::BUDGET_PAUSE_MAX`, the longest a loop waiting for room sleeps.
const CONTENDING_FOR: Duration = Duration::from_millis(1_500);

/// The task types that ask the carrier (the protect poll does not).
const QUERYING: [TaskType; 3] = [TaskType::Realname, TaskType::Carddata, TaskType::Package];

pub(crate) struct GatewayBudget {
    pub(crate) http: Arc<HttpGateway>,
    pub(crate) carriers: Arc<CarrierRouter>,
    /// Per task type, the wait the last answer of no room came with.
    free_in: Mutex<HashMap<TaskType, Duration>>,
    /// Which task types ask for room lately.
    contention: Contention,
}

impl GatewayBudget {
    pub(crate) fn new(http: Arc<HttpGateway>, carriers: Arc<CarrierRouter>) -> Self {
        Self {
            http,
            carriers,
            free_in: Mutex::new(HashMap::new()),
            contention: Contention::default(),
        }
    }
}

/// When each task type last asked for room.
#[derive(Debug, Default)]
struct Contention {
    asked: Mutex<HashMap<TaskType, Instant>>,
}

impl Contention {
    /// `task` asks at `now`: how many querying task types ask lately, `task` included (at
    /// least one).
    fn asking(&self, task: TaskType, now: Instant) -> usize {
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        asked.insert(task, now);
        QUERYING
            .iter()
            .filter(|t| {
                asked
                    .get(t)
                    .is_some_and(|at| now.saturating_duration_since(*at) < CONTENDING_FOR)
            })
            .count()
            .max(1)
    }
}

/// A type's share of `cards` free among `contending` types: an equal part, rounded up (one
/// free card is never split into none).
fn share(cards: usize, contending: usize) -> usize {
    cards.div_ceil(contending.max(1))
}

#[async_trait::async_trait]
impl DispatchBudget for GatewayBudget {
    /// The protect poll makes no query (it stops or starts cards of a device in a protect
    /// period: commands, which the dispatch does not hold back). Real-name and usage queries
    /// of a batch-capable carrier go in batches (`gateway::BatchingGateway`); package queries
    /// one card a call.
    async fn room(&self, task: TaskType) -> Option<usize> {
        if task == TaskType::Protect {
            return None;
        }
        let batched = matches!(task, TaskType::Realname | TaskType::Carddata);
        let paced = self.carriers.paced(PACED_FOR, batched);
        let contending = self.contention.asking(task, Instant::now());
        let room = self.http.dispatch_room_with(HORIZON, &paced).await?;
        self.free_in
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(task, room.free_in);
        Some(share(room.cards, contending))
    }

    fn dispatched(&self, task: TaskType, polls: usize) {
        if task != TaskType::Protect {
            self.http.dispatched(polls);
        }
    }

    fn free_in(&self, task: TaskType) -> Duration {
        self.free_in
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&task)
            .copied()
            .unwrap_or(scheduler::BUDGET_PAUSE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_free_calls_are_shared_equally_among_the_types_asking() {
        assert_eq!(share(300, 1), 300);
        assert_eq!(share(300, 3), 100);
        assert_eq!(share(301, 3), 101);
        // One free card goes to whichever type asks: never rounded down to none.
        assert_eq!(share(1, 3), 1);
        assert_eq!(share(0, 2), 0);
    }

    #[test]
    fn a_type_contends_while_it_asked_lately() {
        let c = Contention::default();
        let t0 = Instant::now();
        assert_eq!(c.asking(TaskType::Carddata, t0), 1);
        assert_eq!(c.asking(TaskType::Package, t0), 2);
        assert_eq!(
            c.asking(TaskType::Realname, t0 + Duration::from_millis(500)),
            3
        );
        // The protect poll asks nothing of the carrier: it never takes a share.
        assert_eq!(
            c.asking(TaskType::Protect, t0 + Duration::from_millis(600)),
            3
        );
        // Package and carddata last asked 1.5 s ago: no cards due there any more.
        assert_eq!(c.asking(TaskType::Realname, t0 + CONTENDING_FOR), 1);
    }
}
