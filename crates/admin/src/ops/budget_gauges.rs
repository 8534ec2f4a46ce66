//! The `cmp_carrier_*` budget gauges, set by the node that ran the `carrier_budget` job (the
//! job runs on one node at a time: read the series of the instance whose
//! [`COMPUTED`] is the latest, or take `max` over instances).
//!
//! Per task type the gauges show the type's shortest configured interval among the carrier's
//! cards (every interval of a carrier stretches by the same `round_ratio`;
//! `GET /carriers/budget` lists each interval). A carrier or type that disappears keeps its
//! last value until the process restarts.

use domain::BudgetReport;

/// `{carrier}`: calls/s the carrier's shared bucket grants (0: no limit).
pub const ALLOWED: &str = "cmp_carrier_budget_allowed_calls_per_second";
/// `{carrier}`: calls/s made to the carrier by every node, over the last 5 minutes.
pub const USED: &str = "cmp_carrier_budget_used_calls_per_second";
/// `{carrier}`: calls/s the carrier's scheduled cards ask for at their intervals.
pub const DEMAND: &str = "cmp_carrier_budget_demand_calls_per_second";
/// `{carrier}`: `max(1, demand / allowed)`, every round's length over its interval.
pub const RATIO: &str = "cmp_carrier_round_ratio";
/// `{carrier,task}`: the shortest configured interval of the type's cards.
pub const INTERVAL: &str = "cmp_carrier_interval_seconds";
/// `{carrier,task}`: the round achievable at the budget for that interval.
pub const ROUND: &str = "cmp_carrier_round_seconds";
/// `{carrier,task}`: cards one query of the type carries.
pub const CARDS_PER_CALL: &str = "cmp_carrier_cards_per_call";
/// `{carrier,task}`: the carrier's cards scheduled for the type.
pub const CARDS: &str = "cmp_carrier_scheduled_cards";
/// When this node last computed the figures (Unix seconds).
pub const COMPUTED: &str = "cmp_carrier_budget_computed_timestamp_seconds";

/// Sets every gauge from `report`.
pub(crate) fn export(report: &BudgetReport) {
    for c in &report.carriers {
        let carrier = c.carrier_id.to_string();
        metrics::gauge!(ALLOWED, "carrier" => carrier.clone())
            .set(c.allowed_calls_per_sec.unwrap_or(0.0));
        metrics::gauge!(USED, "carrier" => carrier.clone()).set(c.used_calls_per_sec);
        metrics::gauge!(DEMAND, "carrier" => carrier.clone()).set(c.demand_calls_per_sec);
        metrics::gauge!(RATIO, "carrier" => carrier.clone()).set(c.round_ratio);
        let mut seen: Vec<domain::TaskType> = Vec::new();
        for t in &c.tasks {
            let labels = [
                ("carrier", carrier.clone()),
                ("task", t.task_type.as_str().to_owned()),
            ];
            let cards: u64 = c
                .tasks
                .iter()
                .filter(|o| o.task_type == t.task_type)
                .map(|o| o.cards)
                .sum();
            // Sorted by type then interval: the first row of a type has its shortest interval.
            if seen.contains(&t.task_type) {
                continue;
            }
            seen.push(t.task_type);
            metrics::gauge!(INTERVAL, &labels).set(t.interval_secs as f64);
            metrics::gauge!(ROUND, &labels).set(t.round_secs);
            metrics::gauge!(CARDS_PER_CALL, &labels).set(f64::from(t.cards_per_call));
            metrics::gauge!(CARDS, &labels).set(cards as f64);
        }
    }
    if let Some(at) = report.computed_at {
        metrics::gauge!(COMPUTED).set(at.timestamp() as f64);
    }
}
