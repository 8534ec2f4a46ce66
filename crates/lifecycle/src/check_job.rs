//! [`QueueCheck`]: the periodic queue check, `cmp-worker check` (both passes, whole fleet) run
//! by one node of the cluster every `CMP_CHECK_INTERVAL_SECS` as a scheduler job, its counts
//! exported as gauges. It repairs nothing (see docs/decisions.md, "The periodic check reports,
//! the operator repairs").

use crate::{CardInitializer, CheckReport, Kind, QueueChecker};
use domain::periodic::{BoxError, PeriodicJob};
use std::time::{Duration, Instant};

/// `cmp_queue_check_entries{kind}`: queue entries the last periodic check found wrong, per
/// kind (`missing`, `unscheduled`, `not_live`, `wrong_shard`, as `cmp-worker check` prints
/// them). Nothing is repaired by the job: `cmp-worker check --repair` does that.
pub const QUEUE_CHECK_ENTRIES: &str = "cmp_queue_check_entries";
/// `cmp_queue_check_cards`: polling-enabled cards the last periodic check read.
pub const QUEUE_CHECK_CARDS: &str = "cmp_queue_check_cards";
/// `cmp_queue_check_members`: queue members the last periodic check read.
pub const QUEUE_CHECK_MEMBERS: &str = "cmp_queue_check_members";
/// `cmp_queue_check_completed_timestamp_seconds`: when the last periodic check ended (unix
/// seconds); with the interval it tells whether the other gauges are current.
pub const QUEUE_CHECK_COMPLETED: &str = "cmp_queue_check_completed_timestamp_seconds";
/// `cmp_queue_check_duration_seconds`: how long the last periodic check took.
pub const QUEUE_CHECK_DURATION: &str = "cmp_queue_check_duration_seconds";

/// The job `queue_check` (its lease is named after it): the checker (without repair) once
/// the queues are initialised.
pub struct QueueCheck {
    checker: QueueChecker,
    initializer: CardInitializer,
    every: Duration,
}

impl QueueCheck {
    /// `checker` should be built without `repair`: the job only reports.
    pub fn new(checker: QueueChecker, initializer: CardInitializer, every: Duration) -> Self {
        QueueCheck {
            checker,
            initializer,
            every,
        }
    }
}

#[async_trait::async_trait]
impl PeriodicJob for QueueCheck {
    fn name(&self) -> &'static str {
        "queue_check"
    }

    fn every(&self) -> Duration {
        self.every
    }

    async fn run(&self) -> Result<(), BoxError> {
        // Before the queues are initialised every card would be "missing": nothing to learn.
        if self.initializer.needs_run().await? {
            tracing::info!("queue check skipped: the queues are not initialised yet");
            return Ok(());
        }
        let started = Instant::now();
        let report = self.checker.run().await?;
        export(&report, started.elapsed());
        Ok(())
    }
}

fn export(report: &CheckReport, took: Duration) {
    for kind in Kind::ALL {
        metrics::gauge!(QUEUE_CHECK_ENTRIES, "kind" => kind.as_str())
            .set(report.of(kind).count as f64);
    }
    metrics::gauge!(QUEUE_CHECK_CARDS).set(report.cards as f64);
    metrics::gauge!(QUEUE_CHECK_MEMBERS).set(report.members as f64);
    metrics::gauge!(QUEUE_CHECK_DURATION).set(took.as_secs_f64());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    metrics::gauge!(QUEUE_CHECK_COMPLETED).set(now.as_secs_f64());
    let count = |kind| report.of(kind).count;
    let (missing, unscheduled, not_live, wrong_shard) = (
        count(Kind::Missing),
        count(Kind::Unscheduled),
        count(Kind::NotLive),
        count(Kind::WrongShard),
    );
    if report.clean() {
        tracing::info!(
            cards = report.cards,
            members = report.members,
            took_ms = took.as_millis() as u64,
            "queue check clean"
        );
    } else {
        let examples: Vec<String> = Kind::ALL
            .iter()
            .flat_map(|kind| report.of(*kind).examples.iter().take(3))
            .map(|(member, task)| format!("{member}/{task}"))
            .collect();
        tracing::warn!(cards = report.cards, members = report.members, missing, unscheduled,
            not_live, wrong_shard, examples = %examples.join(" "),
            "queue check found wrong entries; `cmp-worker check --repair` fixes them");
    }
}
