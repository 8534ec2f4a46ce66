//! Monitoring reads of the shard queues for the admin API and the alert evaluator: per shard
//! the depth, the due count and the age of the oldest due card, in one pipeline per shard
//! (O(shards) round trips, all shards in parallel).

use crate::queue::score::to_score;
use crate::{PollingQueueManager, QueueError};
use domain::TaskType;
use fred::prelude::*;
use fred::types::Value;
use serde::Serialize;
use std::time::Duration;

/// How long one shard may take to answer before it is reported missing.
const SHARD_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// The warning for a shard whose depth could not be read (`分片 X 队列深度查询失败`).
pub const SHARD_DEPTH_FAILED: &str = "队列深度查询失败";

/// One shard queue of one task type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ShardQueueStats {
    pub shard: u32,
    /// `ZCARD`: due, future and leased entries.
    pub depth: u64,
    /// Entries with score <= now.
    pub due: u64,
    /// Seconds since the oldest due entry came due (0 when nothing is due).
    pub oldest_due_age_secs: u64,
    /// Why the shard could not be read; its figures are then 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The shards of one task type added up; failing shards are skipped and named.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueSummary {
    pub depth: u64,
    pub due: u64,
    pub oldest_due_age_secs: u64,
    /// Shards that failed or timed out (their entries are not in the sums).
    pub missing_shards: Vec<u32>,
    /// One line per missing shard, `分片 X 队列深度查询失败`.
    pub warnings: Vec<String>,
}

impl QueueSummary {
    /// Adds up shard figures (`oldest_due_age_secs` is the maximum).
    pub fn of(shards: &[ShardQueueStats]) -> QueueSummary {
        let mut sum = QueueSummary::default();
        for s in shards {
            if s.error.is_some() {
                sum.missing_shards.push(s.shard);
                sum.warnings
                    .push(format!("分片 {} {SHARD_DEPTH_FAILED}", s.shard));
                continue;
            }
            sum.depth += s.depth;
            sum.due += s.due;
            sum.oldest_due_age_secs = sum.oldest_due_age_secs.max(s.oldest_due_age_secs);
        }
        sum
    }
}

impl PollingQueueManager {
    /// Depth, due count and oldest due age of every shard of `task`. A shard that fails is
    /// returned with its error (and logged with the warning); the others are unaffected.
    pub async fn shard_queue_stats(&self, task: TaskType) -> Vec<ShardQueueStats> {
        let now = to_score(self.clock.now());
        let reads = (0..self.settings.shard_count).map(|shard| async move {
            let key = self.keys.shard_queue(shard, task);
            let read = tokio::time::timeout(SHARD_READ_TIMEOUT, self.read_shard(key, now)).await;
            let res = match read {
                Ok(res) => res,
                Err(_) => Err(QueueError::from(fred::error::Error::new(
                    fred::error::ErrorKind::Timeout,
                    "shard read timed out",
                ))),
            };
            match res {
                Ok((depth, due, oldest)) => ShardQueueStats {
                    shard,
                    depth,
                    due,
                    oldest_due_age_secs: oldest
                        .filter(|score| *score <= now)
                        .map(|score| (now - score).max(0.0) as u64)
                        .unwrap_or(0),
                    error: None,
                },
                Err(e) => {
                    tracing::warn!(shard, task = %task, error = %e, "分片 {shard} {SHARD_DEPTH_FAILED} (shard queue depth query failed)");
                    ShardQueueStats {
                        shard,
                        error: Some(e.to_string()),
                        ..ShardQueueStats::default()
                    }
                }
            }
        });
        futures::future::join_all(reads).await
    }

    /// The shards of `task` added up.
    pub async fn queue_summary(&self, task: TaskType) -> QueueSummary {
        QueueSummary::of(&self.shard_queue_stats(task).await)
    }

    /// `ZCARD`, `ZCOUNT -inf now`, and the lowest score, in one round trip.
    async fn read_shard(
        &self,
        key: String,
        now: f64,
    ) -> Result<(u64, u64, Option<f64>), QueueError> {
        let pipe = self.pool.next().pipeline();
        let _: () = pipe.zcard(key.as_str()).await?;
        let _: () = pipe.zcount(key.as_str(), f64::NEG_INFINITY, now).await?;
        let _: () = pipe
            .zrange(key.as_str(), 0, 0, None, false, None, true)
            .await?;
        let replies: Vec<Value> = pipe
            .try_all::<Value>()
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        let mut it = replies.into_iter();
        let depth = it.next().and_then(|v| v.as_u64()).unwrap_or(0);
        let due = it.next().and_then(|v| v.as_u64()).unwrap_or(0);
        // RESP2 answers `[member, score]`, RESP3 `[[member, score]]`.
        let oldest = match it.next() {
            Some(Value::Array(items)) => match items.first() {
                Some(Value::Array(pair)) => pair.get(1).and_then(|v| v.as_f64()),
                _ => items.get(1).and_then(|v| v.as_f64()),
            },
            _ => None,
        };
        Ok((depth, due, oldest))
    }
}
