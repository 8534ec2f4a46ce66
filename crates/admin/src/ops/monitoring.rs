//! Monitoring (`GET /polling-stats*`): what an operator of ten million cards looks at, at the
//! cost of O(shards) Redis round trips and no scan of the card table.
//!
//! * Card counts come from [`MonitoringStore::fleet_counts`]: the planner's statistics
//!   (`pg_class.reltuples`, `pg_stats`) on a large table, an exact count on a small one; the
//!   answer's `cards.source` says which.
//! * Queue figures are read per shard in one pipeline each (`ZCARD`, `ZCOUNT`, lowest score); a
//!   failing shard is skipped, named in `missing_shards` and warned about with
//!   `分片 X 队列深度查询失败`.
//! * Rates come from the per-minute counters the handlers keep (`polling:stats:{type}:minutes:*`).

use super::alert_metrics::MetricReader;
use crate::AdminError;
use chrono::{DateTime, Utc};
use domain::{FleetCounts, TaskType};
use lifecycle::{InitProgress, InitStatus};
use polling_queue::{TaskCounters, quantile_ms};
use serde::Serialize;

/// Minutes the rates of `GET /polling-stats` are computed over.
pub const RATE_WINDOW_MINUTES: u32 = 5;

/// The overview.
#[derive(Debug, Clone)]
pub struct PollingStats {
    pub cards: FleetCounts,
    pub task_types: Vec<TaskTypeStats>,
    pub initializer: InitProgressView,
    /// One line per shard that could not be read (`分片 X 队列深度查询失败`).
    pub warnings: Vec<String>,
    pub generated_at: DateTime<Utc>,
}

/// The overview of one task type.
#[derive(Debug, Clone, Serialize)]
pub struct TaskTypeStats {
    pub task_type: TaskType,
    /// Sum of every readable shard's `ZCARD`.
    pub total_depth: u64,
    pub due_backlog: u64,
    pub oldest_due_age_secs: u64,
    /// Picks in the type's decisive lane (`polling:decisive:{type}`): cards whose next poll may
    /// stop or resume them, taken before the rest of a backlog (due or not yet).
    pub decisive_waiting: u64,
    pub missing_shards: Vec<u32>,
    /// Polls (success + failure) per minute over the last [`RATE_WINDOW_MINUTES`] whole minutes.
    pub polls_per_minute: f64,
    /// Failures / polls over the same minutes (0 when nothing ran).
    pub failure_rate: f64,
    pub rate_window_minutes: u32,
}

/// Per shard queues of one task type.
#[derive(Debug, Clone, Serialize)]
pub struct TaskQueues {
    pub task_type: TaskType,
    pub summary: QueueTotals,
    pub shards: Vec<ShardQueue>,
}

/// One shard queue of one task type, as polling-queue reads it: `ZCARD` (due, future and leased
/// entries), the entries due now, the age of the oldest due one, and why the shard could not be
/// read (its figures are then 0).
pub use polling_queue::ShardQueueStats as ShardQueue;

/// The shards of one task type added up; unreadable shards skipped, named and warned about
/// (`分片 X 队列深度查询失败`, one per missing shard).
pub use polling_queue::QueueSummary as QueueTotals;

/// Run counters of one task type since the counters were last reset.
#[derive(Debug, Clone, Serialize)]
pub struct TaskRunStats {
    pub task_type: TaskType,
    pub success: u64,
    pub failure: u64,
    pub requeued: u64,
    pub mean_duration_ms: f64,
    /// Upper bound of the histogram bucket holding the 95th percentile (`null` when no run).
    pub p95_duration_ms: Option<u64>,
}

/// `polling:init:progress`, decoded, with how far the run has come.
#[derive(Debug, Clone, Default)]
pub struct InitProgressView {
    /// `never_run`, `running`, `completed` or `failed`.
    pub status: &'static str,
    /// processed / total, 0..1.
    pub fraction: f64,
    /// The hash as the initializer wrote it (all zero before the first run).
    pub progress: InitProgress,
}

/// The monitoring service: what the alert metrics read, and the run counters. Cheap to clone.
#[derive(Clone)]
pub struct MonitoringService {
    pub(crate) metrics: MetricReader,
    pub(crate) counters: TaskCounters,
}

impl MonitoringService {
    pub fn new(metrics: MetricReader, counters: TaskCounters) -> Self {
        Self { metrics, counters }
    }

    /// `GET /polling-stats`.
    pub async fn polling_stats(&self) -> Result<PollingStats, AdminError> {
        let now = self.metrics.clock.now();
        let per_type = TaskType::ALL.map(|task| self.type_stats(task, now));
        let (cards, types, initializer) = tokio::join!(
            self.metrics.store.fleet_counts(),
            futures::future::join_all(per_type),
            self.init_progress()
        );
        let mut task_types = Vec::new();
        let mut warnings = Vec::new();
        for res in types {
            let (stats, w) = res?;
            task_types.push(stats);
            warnings.extend(w);
        }
        Ok(PollingStats {
            cards: cards?,
            task_types,
            initializer: initializer?,
            warnings,
            generated_at: now,
        })
    }

    async fn type_stats(
        &self,
        task: TaskType,
        now: DateTime<Utc>,
    ) -> Result<(TaskTypeStats, Vec<String>), AdminError> {
        let (summary, minutes, decisive) = tokio::join!(
            self.metrics.queue.queue_summary(task),
            self.metrics
                .recent
                .task_minutes(task, now, RATE_WINDOW_MINUTES),
            self.metrics.queue.decisive_len(task)
        );
        let minutes = minutes.map_err(AdminError::Queue)?;
        let decisive = decisive.map_err(AdminError::Queue)?;
        let (polls, failures) = minutes.iter().fold((0u64, 0u64), |(p, f), (_, c)| {
            (p + c.polls(), f + c.failure)
        });
        let stats = TaskTypeStats {
            task_type: task,
            total_depth: summary.depth,
            due_backlog: summary.due,
            oldest_due_age_secs: summary.oldest_due_age_secs,
            decisive_waiting: decisive,
            missing_shards: summary.missing_shards,
            polls_per_minute: polls as f64 / f64::from(RATE_WINDOW_MINUTES),
            failure_rate: if polls == 0 {
                0.0
            } else {
                failures as f64 / polls as f64
            },
            rate_window_minutes: RATE_WINDOW_MINUTES,
        };
        Ok((stats, summary.warnings))
    }

    /// `GET /polling-stats/queues`.
    pub async fn queues(&self) -> Vec<TaskQueues> {
        let reads = TaskType::ALL.map(|task| async move {
            let shards = self.metrics.queue.shard_queue_stats(task).await;
            TaskQueues {
                task_type: task,
                summary: QueueTotals::of(&shards),
                shards,
            }
        });
        futures::future::join_all(reads).await
    }

    /// `GET /polling-stats/tasks`.
    pub async fn tasks(&self) -> Result<Vec<TaskRunStats>, AdminError> {
        let mut out = Vec::new();
        for task in TaskType::ALL {
            let (stats, histogram) = tokio::join!(
                self.counters.read(task),
                self.metrics.recent.histogram(task)
            );
            let (stats, histogram) = (
                stats.map_err(AdminError::Queue)?,
                histogram.map_err(AdminError::Queue)?,
            );
            out.push(TaskRunStats {
                task_type: task,
                success: stats.success,
                failure: stats.failure,
                requeued: stats.requeued_full,
                mean_duration_ms: stats.mean_duration_ms(),
                p95_duration_ms: quantile_ms(&histogram, 0.95),
            });
        }
        Ok(out)
    }

    /// `GET /polling-stats/init-progress`.
    pub async fn init_progress(&self) -> Result<InitProgressView, AdminError> {
        let progress = self
            .metrics
            .initializer
            .progress()
            .await
            .map_err(AdminError::Lifecycle)?
            .unwrap_or_default();
        Ok(InitProgressView {
            status: progress.status.map_or("never_run", InitStatus::as_str),
            fraction: if progress.total == 0 {
                0.0
            } else {
                (progress.processed as f64 / progress.total as f64).min(1.0)
            },
            progress,
        })
    }
}
