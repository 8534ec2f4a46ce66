//! The crate's Prometheus series, and the log line of every decision.

use crate::{Action, Decision, Trigger};
use domain::{GatewayOutcome, StopReason};
use tracing::{debug, info};

/// `cmp_card_stops_total{reason}`: gateway stops the carrier accepted.
pub const CARD_STOPS: &str = "cmp_card_stops_total";
/// `cmp_card_starts_total`: gateway starts the carrier accepted.
pub const CARD_STARTS: &str = "cmp_card_starts_total";
/// `cmp_stop_resume_decisions_total{action}`: `stopped`, `started`, `reason_changed`,
/// `nothing`, or `failed` when the action could not be completed.
pub const DECISIONS: &str = "cmp_stop_resume_decisions_total";

/// `cmp_stop_resume_intents_total{outcome}`: how stop and start intents ended: `ok`,
/// `failed`, or `interrupted` (cut off at the call deadline, or found with no live holder).
pub const INTENTS: &str = "cmp_stop_resume_intents_total";

pub(crate) fn record_intent(outcome: GatewayOutcome, n: u64) {
    metrics::counter!(INTENTS, "outcome" => outcome.as_str()).increment(n);
}

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

/// One structured line per decision: `info` for an action, `debug` for nothing.
pub(crate) fn log_decision(d: &Decision, trigger: Trigger) {
    let e = &d.evidence;
    let reason = match d.action {
        Action::Stopped { reason } | Action::ReasonChanged { to: reason, .. } => Some(reason),
        Action::Started | Action::Nothing { .. } => None,
    };
    let why = match d.action {
        Action::Nothing { why } => Some(why.as_str()),
        _ => None,
    };
    macro_rules! emit {
        ($level:ident) => {
            $level!(
                card_id = %d.card_id, trigger = %trigger, action = d.action.label(),
                reason = reason.map(StopReason::as_str), why,
                from_reason = e.stop_reason.map(StopReason::as_str),
                valid_packages = e.valid_packages, exhausted_packages = e.exhausted_packages,
                used_mb = %e.used_mb, limit_mb = ?e.limit_mb,
                real_name_satisfied = e.real_name_satisfied,
                protect_stop = e.protect.stop, protect_start = e.protect.start,
                "stop/resume decision"
            )
        };
    }
    match d.action {
        Action::Nothing { .. } => emit!(debug),
        _ => emit!(info),
    }
}
