//! The dispatch loop's view of the carrier budget: the gateway client's shared GCRA buckets.

use domain::TaskType;
use gateway::HttpGateway;
use polling_queue::RedisRateLimiter;
use scheduler::DispatchBudget;
use std::sync::Arc;
use std::time::Duration;

/// How far ahead the dispatch lets the budget be booked: the commands' burst allowance, so a
/// stop or start passes every query the dispatch booked (docs/decisions.md, "A carrier quota
/// below demand").
pub(crate) const HORIZON: Duration = RedisRateLimiter::DEFAULT_BURST_WINDOW;

pub(crate) struct GatewayBudget(pub(crate) Arc<HttpGateway>);

#[async_trait::async_trait]
impl DispatchBudget for GatewayBudget {
    /// The protect poll makes no query (it stops or starts cards of a device in a protect
    /// period: commands, which the dispatch does not hold back).
    async fn room(&self, task: TaskType) -> Option<usize> {
        if task == TaskType::Protect {
            return None;
        }
        self.0.dispatch_room(HORIZON).await
    }

    fn dispatched(&self, task: TaskType, polls: usize) {
        if task != TaskType::Protect {
            self.0.dispatched(polls);
        }
    }
}
