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
use domain::{Clock, TaskType};
use fred::prelude::*;
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
    /// Per task type, the hour (unix seconds / 3600) this process last pruned in; shared by
    /// clones so a process prunes once per hour, not once per handler.
    pruned_hour: Arc<[AtomicI64; 4]>,
}

impl TaskCounters {
    pub fn new(pool: Pool, keys: Keys, clock: Arc<dyn Clock>) -> Self {
        Self {
            pool,
            keys,
            clock,
            pruned_hour: Arc::new(std::array::from_fn(|_| AtomicI64::new(i64::MIN))),
        }
    }

    /// Counts one run of `task` (one round trip).
    pub async fn record(
        &self,
        task: TaskType,
        outcome: TaskOutcome,
        duration: Duration,
    ) -> Result<(), QueueError> {
        let key = self.keys.render(&RedisKey::Stats { task });
        let now = self.clock.now();
        let hour = now.format("%Y%m%d%H");
        let ms = duration.as_millis().min(i64::MAX as u128) as i64;
        let pipe = self.pool.next().pipeline();
        let _: () = pipe.hincrby(key.as_str(), outcome.as_str(), 1).await?;
        let _: () = pipe.hincrby(key.as_str(), "duration_ms_sum", ms).await?;
        let _: () = pipe
            .hincrby(key.as_str(), format!("hour:{hour}:{}", outcome.as_str()), 1)
            .await?;
        // The histogram (p95) and the per-minute counts (recent rates) of `recent.rs`.
        let _: () = pipe
            .hincrby(key.as_str(), crate::recent::bucket_field(ms as u64), 1)
            .await?;
        crate::recent::queue_minute(&pipe, &self.keys, task, outcome, self.clock.now()).await?;
        let _: Vec<i64> = pipe.all().await?;
        let this_hour = now.timestamp().div_euclid(3600);
        let slot = &self.pruned_hour[task.index()];
        if slot.swap(this_hour, Ordering::Relaxed) != this_hour {
            self.prune(task).await?;
        }
        Ok(())
    }

    /// Deletes the hour fields of `task` older than [`HOURLY_RETENTION`]; returns how many.
    pub async fn prune(&self, task: TaskType) -> Result<u64, QueueError> {
        let key = self.keys.render(&RedisKey::Stats { task });
        let oldest = (self.clock.now() - HOURLY_RETENTION)
            .format("%Y%m%d%H")
            .to_string();
        let fields: Vec<String> = self.pool.hkeys(key.as_str()).await?;
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
        let removed: i64 = self.pool.hdel(key.as_str(), old).await?;
        Ok(u64::try_from(removed).unwrap_or(0))
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
