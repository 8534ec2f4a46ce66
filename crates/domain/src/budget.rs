//! A carrier's call budget against what its cards ask of it: the pure arithmetic behind
//! `GET /carriers/budget`, the `cmp_carrier_budget_*` gauges and the `carrier_round_ratio`
//! alert metric (`docs/scale.md`, "What one carrier account keeps fresh").
//!
//! For one carrier, with `A` the calls/s its shared bucket grants (`rate_limit_per_sec`) and,
//! for every task type `t` and configured interval `I` its cards are polled at, `N` the cards
//! scheduled so and `B` the cards one query carries (the adapter's batch size for the batched
//! real-name and usage queries, 1 for the package query):
//!
//! ```text
//! demand D      = Σ_(t, I) N / (I × B)                       calls/s
//! ratio  F      = max(1, D / A)            (1 when A is unlimited or D = 0)
//! round  R(t,I) = I × F                                      seconds
//! ```
//!
//! A round is the time it takes to poll every card of one type at one interval once. With
//! demand under the budget every card is polled at its interval (`F = 1`); above it, the
//! cards wait their turn in the queues (oldest due first, every type's loop taking its share of
//! the bucket as it comes due), so every round of the carrier stretches by the same factor
//! `D / A`. Batches are taken as full (the batched dispatch fills them under a tight budget;
//! `cmp_carrier_batch_cards` shows how full they really go). The protect poll makes no query
//! (it stops or starts cards when a protect period begins or ends, and commands pass the
//! queries), so it spends none of the budget and is left out; so are stops and starts, which
//! `used` counts but `demand` cannot foresee.

use crate::{CarrierId, CarrierProtocol, TaskType};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The calls/s `cards` scheduled every `interval_secs` ask for at `cards_per_call` a call
/// (`N / (I × B)`; 0 for an interval or a batch of 0).
pub fn calls_per_sec(cards: u64, interval_secs: u64, cards_per_call: u32) -> f64 {
    let per_round = interval_secs as f64 * f64::from(cards_per_call);
    if per_round <= 0.0 {
        return 0.0;
    }
    cards as f64 / per_round
}

/// How far above 1 a ratio must be to count as over the budget (sums of quotients in `f64`
/// land a few ulps either side of an exact 1).
pub const RATIO_NOISE: f64 = 1e-9;

/// `F = max(1, demand / allowed)`: how many intervals a round takes (`allowed` `None`: no
/// limit, 1).
pub fn round_ratio(demand: f64, allowed: Option<f64>) -> f64 {
    match allowed {
        Some(a) if a > 0.0 => (demand / a).max(1.0),
        _ => 1.0,
    }
}

/// One task type's cards of one carrier at one configured interval.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskBudget {
    pub task_type: TaskType,
    /// The interval the matched configs give these cards.
    pub interval_secs: u64,
    /// Live, polling-enabled cards of the carrier polled for this type at this interval.
    pub cards: u64,
    /// Cards one query of this type carries (`batch_size` for real-name and usage, else 1).
    pub cards_per_call: u32,
    /// `cards / (interval_secs × cards_per_call)`.
    pub demand_calls_per_sec: f64,
    /// `interval_secs × round_ratio`: how long polling every one of these cards once takes at
    /// the carrier's budget.
    pub round_secs: f64,
    /// `round_secs > interval_secs` (beyond float noise): the budget cannot keep these cards at
    /// their interval.
    pub over: bool,
}

/// One carrier's budget and demand.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarrierBudget {
    pub carrier_id: CarrierId,
    pub name: String,
    pub protocol: CarrierProtocol,
    /// A disabled carrier is not polled; its figures say what enabling it would ask.
    pub enabled: bool,
    /// Calls/s the shared bucket grants every node together (`rate_limit_per_sec`); `null`: no
    /// limit.
    pub allowed_calls_per_sec: Option<f64>,
    /// Calls in flight at once per node (`max_concurrent`; 0: no bound). Not folded into
    /// `allowed_calls_per_sec`: it caps calls/s at `max_concurrent / latency` only when that is
    /// lower.
    pub max_concurrent: u32,
    /// Most cards one batch query carries (the adapter's; 1: the protocol has none we use).
    pub batch_size: u32,
    /// Calls made to the carrier per second by every node together over the last
    /// `used_window_secs` (queries, stops and starts; a retried command counts once).
    pub used_calls_per_sec: f64,
    /// What the scheduled cards ask: the sum of `tasks[].demand_calls_per_sec`.
    pub demand_calls_per_sec: f64,
    /// `max(1, demand / allowed)`: every round's length over its interval.
    pub round_ratio: f64,
    /// By task type, then interval.
    pub tasks: Vec<TaskBudget>,
}

impl CarrierBudget {
    /// The figures of a carrier from its limits and its cards: `tasks` as
    /// `(task type, interval, cards, cards per call)`, merged by type and interval.
    pub fn compute(
        head: CarrierHead,
        used_calls_per_sec: f64,
        tasks: impl IntoIterator<Item = (TaskType, u64, u64, u32)>,
    ) -> CarrierBudget {
        let mut merged: Vec<(TaskType, u64, u64, u32)> = Vec::new();
        for (task, interval, cards, per_call) in tasks {
            if cards == 0 || interval == 0 {
                continue;
            }
            match merged
                .iter_mut()
                .find(|m| m.0 == task && m.1 == interval && m.3 == per_call)
            {
                Some(m) => m.2 += cards,
                None => merged.push((task, interval, cards, per_call)),
            }
        }
        merged.sort_by_key(|m| (m.0.index(), m.1));
        let allowed = (head.rate_limit_per_sec > 0).then(|| f64::from(head.rate_limit_per_sec));
        let demand: f64 = merged
            .iter()
            .map(|&(_, i, n, b)| calls_per_sec(n, i, b))
            .sum();
        let ratio = round_ratio(demand, allowed);
        let tasks = merged
            .into_iter()
            .map(|(task_type, interval_secs, cards, cards_per_call)| {
                let round_secs = interval_secs as f64 * ratio;
                TaskBudget {
                    task_type,
                    interval_secs,
                    cards,
                    cards_per_call,
                    demand_calls_per_sec: calls_per_sec(cards, interval_secs, cards_per_call),
                    round_secs,
                    // Past the interval by more than float noise: a demand equal to the budget
                    // is not over it.
                    over: ratio > 1.0 + RATIO_NOISE,
                }
            })
            .collect();
        CarrierBudget {
            carrier_id: head.carrier_id,
            name: head.name,
            protocol: head.protocol,
            enabled: head.enabled,
            allowed_calls_per_sec: allowed,
            max_concurrent: head.max_concurrent,
            batch_size: head.batch_size,
            used_calls_per_sec,
            demand_calls_per_sec: demand,
            round_ratio: ratio,
            tasks,
        }
    }
}

/// What [`CarrierBudget::compute`] takes of the carrier's account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarrierHead {
    pub carrier_id: CarrierId,
    pub name: String,
    pub protocol: CarrierProtocol,
    pub enabled: bool,
    pub rate_limit_per_sec: u32,
    pub max_concurrent: u32,
    /// The adapter's batch size.
    pub batch_size: u32,
}

/// Every carrier's budget, as the `carrier_budget` job last computed it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetReport {
    /// When the job computed it (`null`: never, or more than a few minutes ago — no worker
    /// ran the job).
    pub computed_at: Option<DateTime<Utc>>,
    /// The window `used_calls_per_sec` is averaged over.
    pub used_window_secs: u32,
    /// By carrier id.
    pub carriers: Vec<CarrierBudget>,
}

impl BudgetReport {
    /// The largest `round_ratio` of the enabled carriers with cards to poll (0 when none):
    /// above 1, some carrier's cards cannot be kept at their interval.
    pub fn worst_round_ratio(&self) -> f64 {
        self.carriers
            .iter()
            .filter(|c| c.enabled && !c.tasks.is_empty())
            .map(|c| c.round_ratio)
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(rate: u32, batch: u32) -> CarrierHead {
        CarrierHead {
            carrier_id: CarrierId(1),
            name: "c".into(),
            protocol: CarrierProtocol::OneLink,
            enabled: true,
            rate_limit_per_sec: rate,
            max_concurrent: 10,
            batch_size: batch,
        }
    }

    #[test]
    fn the_scale_page_example() {
        // docs/scale.md: OneLink, usage every 5 min at 100 cards a call and packages every hour
        // one card a call: N/30,000 + N/3,600 calls/s; 20 calls/s carry N = 64,285.7.
        let n = 64_000;
        let b = CarrierBudget::compute(
            head(20, 100),
            0.0,
            [
                (TaskType::Carddata, 300, n, 100),
                (TaskType::Package, 3600, n, 1),
            ],
        );
        let want = n as f64 / 30_000.0 + n as f64 / 3_600.0;
        assert!((b.demand_calls_per_sec - want).abs() < 1e-9);
        assert_eq!(b.round_ratio, 1.0);
        assert!(b.tasks.iter().all(|t| !t.over));
    }

    #[test]
    fn over_budget_stretches_every_round_alike() {
        // 6,000 usage cards at 60 s, 10 a call: 10 calls/s; 600 package cards at 60 s: 10
        // calls/s; 5 calls/s allowed: ratio 4.
        let b = CarrierBudget::compute(
            head(5, 10),
            1.5,
            [
                (TaskType::Carddata, 60, 4_000, 10),
                (TaskType::Package, 60, 600, 1),
                (TaskType::Carddata, 60, 2_000, 10),
            ],
        );
        assert_eq!(b.demand_calls_per_sec, 20.0);
        assert_eq!(b.round_ratio, 4.0);
        assert_eq!(b.tasks.len(), 2);
        assert_eq!(b.tasks[0].cards, 6_000);
        assert_eq!(b.tasks[0].round_secs, 240.0);
        assert!(b.tasks.iter().all(|t| t.over));
    }

    #[test]
    fn unlimited_and_empty() {
        let b = CarrierBudget::compute(head(0, 1), 0.0, [(TaskType::Package, 60, 6_000, 1)]);
        assert_eq!(b.allowed_calls_per_sec, None);
        assert_eq!(b.round_ratio, 1.0);
        let empty = CarrierBudget::compute(head(5, 1), 0.0, []);
        assert_eq!(empty.demand_calls_per_sec, 0.0);
        assert_eq!(empty.round_ratio, 1.0);
        let report = BudgetReport {
            computed_at: None,
            used_window_secs: 300,
            carriers: vec![empty],
        };
        assert_eq!(report.worst_round_ratio(), 0.0);
        assert_eq!(calls_per_sec(10, 0, 1), 0.0);
    }
}
