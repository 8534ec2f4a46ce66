//! The dispatch loop of a worker node (`docs/architecture.md`, "Data flow of one poll").
//!
//! One loop per task type: drain the manual list first, then take due cards from every shard
//! in parallel — exactly as many as that type's handler pool has room for (a full pool
//! dequeues nothing: backpressure) — and hand them to the pool in memory. A loop goes round
//! again at once while it finds work and sleeps one tick when there is none. Periodic jobs
//! (package activation check, monthly data reset, usage partitions) run from the same
//! scheduler, each in its own task under a singleton lease renewed while it runs.
//!
//! The scheduler owns no Redis key and no SQL: it drives `polling-queue` and the handlers of
//! `task-handlers`. Only `cmp-worker` links it.

mod dispatch;
mod gate;
mod periodic;
mod pools;
mod shards;
mod trace;
mod type_loop;
mod upkeep;

pub use dispatch::{Scheduler, SchedulerSettings, ShutdownReport};
pub use gate::{BUDGET_PAUSE, BUDGET_PAUSE_MAX, DispatchBudget};
pub use periodic::{BoxError, PeriodicJob};
pub use pools::PoolSizes;
pub use upkeep::{DECISIVE_WAITING, OLDEST_DUE_AGE};
