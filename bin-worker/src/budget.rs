//! The dispatch loop's view of the carrier budget: the shared GCRA buckets of the carriers
//! called lately, the default gateway's and the configured carriers' (whose adapters reserve
//! from the same buckets), a free call counting as many cards as one call of the task carries.

use domain::TaskType;
use gateway::HttpGateway;
use gateway::carriers::CarrierRouter;
use polling_queue::RedisRateLimiter;
use scheduler::DispatchBudget;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How far ahead the dispatch lets the budget be booked: the commands' burst allowance, so a
/// stop or start passes every query the dispatch booked (docs/decisions.md, "A carrier quota
/// below demand").
pub(crate) const HORIZON: Duration = RedisRateLimiter::DEFAULT_BURST_WINDOW;

/// A configured carrier not called for this long no longer paces the dispatch.
const PACED_FOR: Duration = Duration::from_secs(60);

pub(crate) struct GatewayBudget {
    pub(crate) http: Arc<HttpGateway>,
    pub(crate) carriers: Arc<CarrierRouter>,
    /// Per task type, the wait the last answer of no room came with.
    free_in: Mutex<HashMap<TaskType, Duration>>,
}

impl GatewayBudget {
    pub(crate) fn new(http: Arc<HttpGateway>, carriers: Arc<CarrierRouter>) -> Self {
        Self {
            http,
            carriers,
            free_in: Mutex::new(HashMap::new()),
        }
    }
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
        let room = self.http.dispatch_room_with(HORIZON, &paced).await?;
        self.free_in
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(task, room.free_in);
        Some(room.cards)
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
