//! Answers of the operations routes: monitoring, the metrics history, concurrency, data
//! cleanup, alert rules, carriers.

use crate::mirror::{Mirror, mirror_enum, view};
use chrono::{DateTime, Utc};
use domain::{
    AlertRule, CarrierHealth, CarrierId, CarrierLimits, CarrierProtocol, CleanupConfigId,
    FleetCounts, HistoryResolution, MetricsPoint, TaskType,
};

view! {
    /// The overview.
    struct PollingStats from admin::monitoring::PollingStats {
        cards: FleetCounts,
        task_types: Vec<TaskTypeStats>,
        initializer: InitProgressView,
        /// One line per shard that could not be read (`分片 X 队列深度查询失败`).
        warnings: Vec<String>,
        generated_at: DateTime<Utc>,
    }
}

view! {
    /// The overview of one task type.
    struct TaskTypeStats from admin::monitoring::TaskTypeStats {
        task_type: TaskType,
        /// Sum of every readable shard's `ZCARD`.
        total_depth: u64,
        due_backlog: u64,
        oldest_due_age_secs: u64,
        /// Picks in the type's decisive lane (`polling:decisive:{type}`): cards whose next poll
        /// may stop or resume them, taken before the rest of a backlog (due or not yet).
        decisive_waiting: u64,
        missing_shards: Vec<u32>,
        /// Polls (success + failure) per minute over the last [`RATE_WINDOW_MINUTES`] whole minutes.
        polls_per_minute: f64,
        /// Failures / polls over the same minutes (0 when nothing ran).
        failure_rate: f64,
        rate_window_minutes: u32,
    }
}

/// `polling:init:progress`, decoded.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(crate) struct InitProgressView {
    /// `never_run`, `running`, `completed` or `failed`.
    pub(crate) status: String,
    pub(crate) total: u64,
    pub(crate) processed: u64,
    pub(crate) unmatched: u64,
    pub(crate) added: u64,
    /// processed / total, 0..1.
    pub(crate) fraction: f64,
    pub(crate) shard_count: Option<u32>,
    pub(crate) shards: Vec<u64>,
    pub(crate) mode: Option<String>,
    pub(crate) started_at: Option<DateTime<Utc>>,
    pub(crate) finished_at: Option<DateTime<Utc>>,
    pub(crate) error: Option<String>,
}

impl Mirror<admin::monitoring::InitProgressView> for InitProgressView {
    fn mirror(from: admin::monitoring::InitProgressView) -> Self {
        let admin::monitoring::InitProgressView {
            status,
            fraction,
            progress: p,
        } = from;
        Self {
            status: status.to_owned(),
            total: p.total,
            processed: p.processed,
            unmatched: p.unmatched,
            added: p.added,
            fraction,
            shard_count: p.shard_count,
            shards: p.shards,
            mode: p.mode,
            started_at: p.started_at,
            finished_at: p.finished_at,
            error: p.error,
        }
    }
}

view! {
    /// Per shard queues of one task type.
    struct TaskQueues from admin::monitoring::TaskQueues {
        task_type: TaskType,
        summary: QueueTotals,
        shards: Vec<ShardQueue>,
    }
}

view! {
    /// The shards of one task type added up; unreadable shards skipped and named.
    struct QueueTotals from admin::monitoring::QueueTotals {
        depth: u64,
        due: u64,
        oldest_due_age_secs: u64,
        missing_shards: Vec<u32>,
        /// `分片 X 队列深度查询失败`, one per missing shard.
        warnings: Vec<String>,
    }
}

view! {
    /// One shard queue of one task type.
    struct ShardQueue from admin::monitoring::ShardQueue {
        shard: u32,
        /// `ZCARD`: due, future and leased entries.
        depth: u64,
        /// Entries due now (score <= now).
        due: u64,
        /// Seconds since the oldest due entry came due (0 when none is due).
        oldest_due_age_secs: u64,
        /// Why the shard could not be read (its figures are then 0).
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    }
}

view! {
    /// Run counters of one task type since the counters were last reset.
    struct TaskRunStats from admin::monitoring::TaskRunStats {
        task_type: TaskType,
        success: u64,
        failure: u64,
        requeued: u64,
        mean_duration_ms: f64,
        /// Upper bound of the histogram bucket holding the 95th percentile (`null` when no run).
        p95_duration_ms: Option<u64>,
    }
}

mirror_enum! {
    /// The chart ranges of the dashboard.
    enum HistoryRange mirrors admin::history::HistoryRange {
        #[serde(rename = "1h")] Hour,
        #[serde(rename = "24h")] Day,
        #[serde(rename = "30d")] Month,
        #[serde(rename = "13mo")] ThirteenMonths,
    }
}

view! {
    /// A series for a chart.
    struct Series from admin::history::Series {
        scope: String,
        resolution: HistoryResolution,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        points: Vec<MetricsPoint>,
    }
}

view! {
    /// One task type's semaphore.
    struct ConcurrencyView from admin::concurrency::ConcurrencyView {
        task_type: TaskType,
        /// Slots held right now (expired holders not counted).
        current: u64,
        max: u32,
        /// The max while none is set (from `CMP_WORKER_POOL_*`).
        default_max: u32,
    }
}

view! {
    /// What a run would remove from one table.
    struct PreviewRow from admin::cleanup::PreviewRow {
        config_id: CleanupConfigId,
        table_name: String,
        enabled: bool,
        retention_days: i32,
        /// Rows older than this go.
        cutoff: DateTime<Utc>,
        /// Rows a run would delete (for the usage table: the partitions' estimates plus the old
        /// rows of the default partition).
        rows: u64,
        /// Whether `rows` holds planner estimates (whole partitions) rather than a count.
        estimated: bool,
        /// Monthly partitions a run would drop.
        partitions: Vec<String>,
        /// Why the table is skipped (e.g. it does not exist yet).
        note: Option<String>,
    }
}

view! {
    /// `POST /data-cleanup/run`'s answer.
    struct RunStarted from admin::cleanup::RunStarted {
        run_id: String,
        started_at: DateTime<Utc>,
    }
}

view! {
    /// A rule just created, with its webhook secret: the only answer that shows it.
    struct CreatedRule from admin::alerts::CreatedRule {
        #[serde(flatten)]
        rule: AlertRule,
        webhook_secret: String,
    }
}

view! {
    /// A carrier as the API shows it: everything but the credentials' values.
    #[schema(as = Carrier)]
    struct CarrierView from admin::carriers::CarrierView {
        carrier_id: CarrierId,
        name: String,
        protocol: CarrierProtocol,
        base_url: String,
        /// The names of the credential fields set, never their values.
        credential_fields: Vec<String>,
        limits: CarrierLimits,
        enabled: bool,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        /// What the worker nodes last published; `null` before any did (or when Redis did not
        /// answer).
        health: Option<CarrierHealth>,
    }
}

view! {
    /// The answer of a test connection: always given when the carrier exists; `ok` says whether
    /// the platform accepted the credentials and answered.
    struct ConnectionTest from admin::carriers::ConnectionTest {
        ok: bool,
        /// `ok`, or the failure's kind: `auth_error`, `timeout`, `transport_error`, `carrier_4xx`,
        /// `carrier_5xx`, `throttled`, `decode_error`, `unintelligible`, ...
        outcome: String,
        /// The failure in words, credentials replaced by `***`.
        message: String,
        elapsed_ms: u64,
    }
}
