//! The metrics history (`tb_polling_metrics_history`) the dashboard charts without Prometheus.
//!
//! Every minute (worker job, singleton lease) [`HistoryService::sample`] writes the last whole
//! minute per task type (polls, failures, requeued from the minute counters; due backlog,
//! oldest due age and depth from the shards) and a fleet row (`all`: stops by reason from the
//! state log, gateway calls, errors and throttles). It then rolls the minutes of the current
//! hour into an hour point and the hours of the current day into a day point (counters summed,
//! gauges maxed) and prunes each resolution by age: minutes after 48 h, hours after 40 days,
//! days after 400 days. At most ~4,300 rows per task type; data cleanup is the backstop.

use crate::AdminError;
use chrono::{DateTime, Duration as ChronoDuration, Timelike, Utc};
use domain::store::{MetricsHistoryStore, MonitoringStore};
use domain::{Clock, HistoryResolution, HistoryScope, MetricsPoint, TaskType};
use polling_queue::{PollingQueueManager, RecentCounters};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How long each resolution is kept.
pub const KEEP_MINUTES: ChronoDuration = ChronoDuration::hours(48);
pub const KEEP_HOURS: ChronoDuration = ChronoDuration::days(40);
pub const KEEP_DAYS: ChronoDuration = ChronoDuration::days(400);

/// The chart ranges of the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HistoryRange {
    #[serde(rename = "1h")]
    Hour,
    #[serde(rename = "24h")]
    Day,
    #[serde(rename = "30d")]
    Month,
    #[serde(rename = "13mo")]
    ThirteenMonths,
}

impl HistoryRange {
    /// The resolution read for the range and how far back it goes.
    pub fn plan(self) -> (HistoryResolution, ChronoDuration) {
        match self {
            HistoryRange::Hour => (HistoryResolution::Minute, ChronoDuration::hours(1)),
            HistoryRange::Day => (HistoryResolution::Minute, ChronoDuration::hours(24)),
            HistoryRange::Month => (HistoryResolution::Hour, ChronoDuration::days(30)),
            HistoryRange::ThirteenMonths => (HistoryResolution::Day, ChronoDuration::days(396)),
        }
    }
}

/// A series for a chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Series {
    pub scope: String,
    pub resolution: HistoryResolution,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub points: Vec<MetricsPoint>,
}

/// Samples and reads the metrics history; cheap to clone.
#[derive(Clone)]
pub struct HistoryService {
    store: Arc<dyn MetricsHistoryStore>,
    monitoring: Arc<dyn MonitoringStore>,
    queue: PollingQueueManager,
    recent: RecentCounters,
    clock: Arc<dyn Clock>,
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl HistoryService {
    pub fn new(
        store: Arc<dyn MetricsHistoryStore>,
        monitoring: Arc<dyn MonitoringStore>,
        queue: PollingQueueManager,
        recent: RecentCounters,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            monitoring,
            queue,
            recent,
            clock,
        }
    }

    /// Writes the last whole minute, rolls it up, prunes. Returns the minute written.
    pub async fn sample(&self) -> Result<DateTime<Utc>, AdminError> {
        let now = self.clock.now();
        let this_minute = now
            .with_second(0)
            .and_then(|t| t.with_nanosecond(0))
            .unwrap_or(now);
        let minute = this_minute - ChronoDuration::minutes(1);
        for task in TaskType::ALL {
            let counts = self
                .recent
                .task_minutes(task, this_minute, 1)
                .await
                .map_err(AdminError::Queue)?;
            let c = counts.first().map(|(_, c)| *c).unwrap_or_default();
            let q = self.queue.queue_summary(task).await;
            let point = MetricsPoint {
                bucket_at: minute,
                polls: to_i64(c.polls()),
                failures: to_i64(c.failure),
                requeued: to_i64(c.requeued_full),
                due_backlog: to_i64(q.due),
                oldest_due_age_secs: to_i64(q.oldest_due_age_secs),
                depth: to_i64(q.depth),
                ..MetricsPoint::default()
            };
            self.store
                .upsert_minute(HistoryScope::Task(task), &[point])
                .await?;
        }
        let gateway = self
            .recent
            .gateway_minutes(this_minute, 1)
            .await
            .map_err(AdminError::Queue)?;
        let g = gateway.first().map(|(_, g)| *g).unwrap_or_default();
        let stops = self.monitoring.stops_between(minute, this_minute).await?;
        let fleet = MetricsPoint {
            bucket_at: minute,
            gateway_calls: to_i64(g.calls()),
            gateway_errors: to_i64(g.error),
            gateway_throttles: to_i64(g.throttled),
            stops: stops
                .into_iter()
                .map(|(reason, n)| (reason.as_str().to_owned(), to_i64(n)))
                .collect(),
            ..MetricsPoint::default()
        };
        self.store
            .upsert_minute(HistoryScope::All, &[fleet])
            .await?;
        self.store
            .rollup(HistoryResolution::Minute, HistoryResolution::Hour, minute)
            .await?;
        self.store
            .rollup(HistoryResolution::Hour, HistoryResolution::Day, minute)
            .await?;
        self.store
            .prune(HistoryResolution::Minute, now - KEEP_MINUTES)
            .await?;
        self.store
            .prune(HistoryResolution::Hour, now - KEEP_HOURS)
            .await?;
        self.store
            .prune(HistoryResolution::Day, now - KEEP_DAYS)
            .await?;
        Ok(minute)
    }

    /// The points of `scope` (a task type or `all`) over `range`, oldest first.
    pub async fn series(
        &self,
        scope: HistoryScope,
        range: HistoryRange,
    ) -> Result<Series, AdminError> {
        let (resolution, back) = range.plan();
        let to = self.clock.now();
        let from = to - back;
        let points = self.store.series(scope, resolution, from, to).await?;
        Ok(Series {
            scope: scope.as_str().to_owned(),
            resolution,
            from,
            to,
            points,
        })
    }
}
