//! Task counters (`polling:stats:{type}`, read by the dashboard) and Prometheus metrics.
//!
//! The scheduler already counts dispatches (`cmp_tasks_handled_total`); these are the
//! handlers' own: outcomes as the handler saw them, and what the polls changed.

use crate::Outcome;
use domain::TaskType;
use polling_queue::{TaskCounters, TaskOutcome};
use std::time::Duration;
use tracing::debug;

/// Counts one run. In the Redis counters a skipped run (nothing to poll) is a success: the run
/// ended normally; the metrics keep the exact outcome.
pub(crate) async fn record_run(
    counters: &TaskCounters,
    task: TaskType,
    outcome: Outcome,
    elapsed: Duration,
) {
    let counted = match outcome {
        Outcome::Success | Outcome::Skipped => TaskOutcome::Success,
        Outcome::Failure => TaskOutcome::Failure,
        Outcome::RequeuedFull => TaskOutcome::RequeuedFull,
    };
    if let Err(error) = counters.record(task, counted, elapsed).await {
        debug!(task = %task, %error, "cannot record the task counters");
    }
    metrics::counter!("cmp_handler_runs_total", "task" => task.as_str(), "outcome" => outcome.as_str())
        .increment(1);
    metrics::histogram!("cmp_handler_run_seconds", "task" => task.as_str())
        .record(elapsed.as_secs_f64());
}

/// A change a poll found and wrote: `realname_0_to_1`, `realname_1_to_0`, `usage_rollover`,
/// `usage_correction`, `carrier_month_mismatch` (the carrier's month is not the local calendar's
/// month in `CMP_TIMEZONE`), `protect_forced_stop`, `protect_forced_start`, ...
pub(crate) fn change(task: TaskType, kind: &'static str) {
    metrics::counter!("cmp_handler_changes_total", "task" => task.as_str(), "kind" => kind)
        .increment(1);
}

/// Cards evaluated by a periodic package job, by action.
pub(crate) fn job_evaluated(job: &'static str, action: &'static str) {
    metrics::counter!("cmp_package_job_cards_total", "job" => job, "action" => action).increment(1);
}
