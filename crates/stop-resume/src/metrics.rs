//! The crate's Prometheus series.

use crate::Action;

/// `cmp_card_stops_total{reason}`: gateway stops the carrier accepted.
pub const CARD_STOPS: &str = "cmp_card_stops_total";
/// `cmp_card_starts_total`: gateway starts the carrier accepted.
pub const CARD_STARTS: &str = "cmp_card_starts_total";
/// `cmp_stop_resume_decisions_total{action}`: `stopped`, `started`, `reason_changed`,
/// `nothing`, or `failed` when the action could not be completed.
pub const DECISIONS: &str = "cmp_stop_resume_decisions_total";

pub(crate) fn record(action: Action) {
    match action {
        Action::Stopped { reason } => {
            metrics::counter!(CARD_STOPS, "reason" => reason.as_str()).increment(1);
        }
        Action::Started => metrics::counter!(CARD_STARTS).increment(1),
        Action::ReasonChanged { .. } | Action::Nothing { .. } => {}
    }
    metrics::counter!(DECISIONS, "action" => action.label()).increment(1);
}

pub(crate) fn record_failure() {
    metrics::counter!(DECISIONS, "action" => "failed").increment(1);
}
