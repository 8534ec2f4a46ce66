//! Task counters `polling:stats:{type}`: a hash of totals plus one field per hour and outcome.
//!
//! Fields: `success`, `failure`, `requeued_full`, `duration_ms_sum`, and
//! `hour:{YYYYMMDDHH}:{outcome}` (UTC hour) for the dashboard's recent history, and the
//! duration histogram `hist:{upper_ms}`; each run also counts in the minute hash of
//! `recent.rs`.
//!
//! Retention: hour fields older than [`HOURLY_RETENTION`] are deleted, so the hash holds at
//! most about 48 × 3 hour fields instead of growing every hour forever. The pruning costs one
//! `HKEYS` + `HDEL` per task type per process when it first records in a new hour (each node
//! prunes; deleting what another node deleted is a no-op).

use crate::{Keys, QueueError, RedisKey};
use batch::Batcher;
use chrono::{DateTime, Utc};
use domain::{Cause, Clock, TaskType};
use fred::prelude::*;
use fred::types::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::{sync::Arc, time::Duration};

/// How long hour fields are kept.
pub const HOURLY_RETENTION: chrono::Duration = chrono::Duration::hours(48);

/// How one task run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskOutcome {
    /// Polled and handled.
    Success,
    /// Failed (gateway error, timeout, store error); rescheduled at the retry interval.
    Failure,
    /// The concurrency pool was full; rescheduled for now without polling.
    RequeuedFull,
}

impl TaskOutcome {
    /// The hash field name.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskOutcome::Success => "success",
            TaskOutcome::Failure => "failure",
            TaskOutcome::RequeuedFull => "requeued_full",
        }
    }
}

/// Counts of one hour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HourlyCounts {
    pub success: u64,
    pub failure: u64,
    pub requeued_full: u64,
}

/// The counters of one task type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskStats {
    pub success: u64,
    pub failure: u64,
    pub requeued_full: u64,
    /// Sum of the durations of every recorded run, milliseconds.
    pub duration_ms_sum: u64,
    /// Per UTC hour, keyed `YYYYMMDDHH`.
    pub hourly: BTreeMap<String, HourlyCounts>,
}

impl TaskStats {
    /// Mean duration of a recorded run, milliseconds (0 when nothing was recorded).
    pub fn mean_duration_ms(&self) -> f64 {
        let runs = self.success + self.failure + self.requeued_full;
        if runs == 0 {
            0.0
        } else {
            self.duration_ms_sum as f64 / runs as f64
        }
    }
}

/// Writes and reads the task counters.
#[derive(Debug, Clone)]
pub struct TaskCounters {
    pool: Pool,
    keys: Keys,
    clock: Arc<dyn Clock>,
    /// Group commit of [`record`](Self::record): the runs of concurrent polls are summed per
    /// field and written as one pipeline (a few `HINCRBY` per task type and outcome instead of
    /// six commands per run).
    writer: Batcher<Run, Result<(), Cause>>,
}

/// One recorded run.
#[derive(Debug, Clone, Copy)]
struct Run {
    task: TaskType,
    outcome: TaskOutcome,
    duration_ms: i64,
    at: DateTime<Utc>,
}

/// The most runs one pipeline sums.
const RECORD_BATCH: usize = 4_000;

impl TaskCounters {
    pub fn new(pool: Pool, keys: Keys, clock: Arc<dyn Clock>) -> Self {
        // Per task type, the hour (unix seconds / 3600) this process last pruned in; shared by
        // the flushes so a process prunes once per hour.
        let pruned_hour: Arc<[AtomicI64; 4]> =
            Arc::new(std::array::from_fn(|_| AtomicI64::new(i64::MIN)));
        let writer = {
            let (pool, keys, clock) = (pool.clone(), keys.clone(), clock.clone());
            Batcher::new("task counters", RECORD_BATCH, move |runs: Vec<Run>| {
                let (pool, keys, clock) = (pool.clone(), keys.clone(), clock.clone());
                let pruned_hour = pruned_hour.clone();
                async move {
                    let n = runs.len();
                    match write(&pool, &keys, clock.as_ref(), &runs, &pruned_hour).await {
                        Ok(()) => vec![Ok(()); n],
                        Err(error) => vec![Err(Cause::new(error)); n],
                    }
                }
            })
        };
        Self {
            pool,
            keys,
            clock,
            writer,
        }
    }

    /// Counts one run of `task`. Concurrent calls share one pipeline; the call returns once
    /// its run is counted.
    pub async fn record(
        &self,
        task: TaskType,
        outcome: TaskOutcome,
        duration: Duration,
    ) -> Result<(), QueueError> {
        let run = Run {
            task,
            outcome,
            duration_ms: duration.as_millis().min(i64::MAX as u128) as i64,
            at: self.clock.now(),
        };
        self.writer
            .submit(run)
            .await
            .map_err(|closed| QueueError::Batch(Cause::new(closed)))?
            .map_err(QueueError::Batch)
    }

    /// Deletes the hour fields of `task` older than [`HOURLY_RETENTION`]; returns how many.
    pub async fn prune(&self, task: TaskType) -> Result<u64, QueueError> {
        prune(&self.pool, &self.keys, self.clock.as_ref(), task).await
    }

    /// The counters of `task`.
    pub async fn read(&self, task: TaskType) -> Result<TaskStats, QueueError> {
        let key = self.keys.render(&RedisKey::Stats { task });
        let fields: HashMap<String, String> = self.pool.hgetall(key.as_str()).await?;
        let mut stats = TaskStats::default();
        for (field, raw) in fields {
            let n: u64 = raw.parse().map_err(|e| QueueError::Corrupt {
                key: key.clone(),
                detail: format!("field {field} = `{raw}`: {e}"),
                source: Some(Cause::new(e)),
            })?;
            let mut parts = field.splitn(3, ':');
            let slot = match (parts.next(), parts.next(), parts.next()) {
                (Some("hour"), Some(h), Some(outcome)) => {
                    let counts = stats.hourly.entry(h.to_owned()).or_default();
                    match outcome {
                        "success" => &mut counts.success,
                        "failure" => &mut counts.failure,
                        "requeued_full" => &mut counts.requeued_full,
                        _ => continue,
                    }
                }
                (Some("success"), None, _) => &mut stats.success,
                (Some("failure"), None, _) => &mut stats.failure,
                (Some("requeued_full"), None, _) => &mut stats.requeued_full,
                (Some("duration_ms_sum"), None, _) => &mut stats.duration_ms_sum,
                _ => continue,
            };
            *slot = n;
        }
        Ok(stats)
    }

    /// Clears the counters of `task`.
    pub async fn reset(&self, task: TaskType) -> Result<(), QueueError> {
        let _: i64 = self
            .pool
            .del(self.keys.render(&RedisKey::Stats { task }))
            .await?;
        Ok(())
    }
}

/// Writes the sums of `runs` in one pipeline, then prunes the hour fields of a task type
/// the first time this process counts it in a new hour.
async fn write(
    pool: &Pool,
    keys: &Keys,
    clock: &dyn Clock,
    runs: &[Run],
    pruned_hour: &[AtomicI64; 4],
) -> Result<(), QueueError> {
    let mut sums: BTreeMap<(String, String), i64> = BTreeMap::new();
    let mut minute_keys: Vec<String> = Vec::new();
    for run in runs {
        let key = keys.render(&RedisKey::Stats { task: run.task });
        let outcome = run.outcome.as_str();
        let hour = run.at.format("%Y%m%d%H");
        for (field, n) in [
            (outcome.to_owned(), 1),
            ("duration_ms_sum".to_owned(), run.duration_ms),
            (format!("hour:{hour}:{outcome}"), 1),
            // The histogram (p95) of `recent.rs`.
            (super::recent::bucket_field(run.duration_ms as u64), 1),
        ] {
            *sums.entry((key.clone(), field)).or_default() += n;
        }
        // The per-minute counts (recent rates) of `recent.rs`.
        let (minute_key, field) = super::recent::minute_field(keys, run.task, run.outcome, run.at);
        if !minute_keys.contains(&minute_key) {
            minute_keys.push(minute_key.clone());
        }
        *sums.entry((minute_key, field)).or_default() += 1;
    }
    let pipe = pool.next().pipeline();
    for ((key, field), n) in sums {
        let _: () = pipe.hincrby(key, field, n).await?;
    }
    for key in minute_keys {
        let _: () = pipe
            .expire(key, super::recent::MINUTES_TTL_SECS, None)
            .await?;
    }
    let _: Vec<Value> = pipe.all().await?;
    let mut pruned: [bool; 4] = [false; 4];
    for run in runs {
        let this_hour = run.at.timestamp().div_euclid(3600);
        let slot = &pruned_hour[run.task.index()];
        if !pruned[run.task.index()] && slot.swap(this_hour, Ordering::Relaxed) < this_hour {
            pruned[run.task.index()] = true;
            prune(pool, keys, clock, run.task).await?;
        }
    }
    Ok(())
}

/// [`TaskCounters::prune`], also run by the writer once a task's hour has turned.
async fn prune(
    pool: &Pool,
    keys: &Keys,
    clock: &dyn Clock,
    task: TaskType,
) -> Result<u64, QueueError> {
    let key = keys.render(&RedisKey::Stats { task });
    let oldest = (clock.now() - HOURLY_RETENTION)
        .format("%Y%m%d%H")
        .to_string();
    let fields: Vec<String> = pool.hkeys(key.as_str()).await?;
    let old: Vec<String> = fields
        .into_iter()
        .filter(|field| {
            let mut parts = field.splitn(3, ':');
            matches!((parts.next(), parts.next()), (Some("hour"), Some(h)) if h < oldest.as_str())
        })
        .collect();
    if old.is_empty() {
        return Ok(0);
    }
    let removed: i64 = pool.hdel(key.as_str(), old).await?;
    Ok(u64::try_from(removed).unwrap_or(0))
}
