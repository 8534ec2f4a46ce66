//! What the monitoring reads and the workers report: task counters and recent rates, queue
//! depths and per-shard stats, one card's keys for the explain page, the carrier health board,
//! the carriers' calls per minute and budget figures.

pub(crate) mod carrier_budget;
pub(crate) mod carrier_health;
mod depth;
pub(crate) mod inspect;
pub(crate) mod monitor;
pub(crate) mod recent;
pub(crate) mod stats;
