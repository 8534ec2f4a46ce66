//! Monitoring reads of [`PollingQueueManager`]: queue depths and the due backlog.

use crate::queue::score::to_score;
use crate::{PollingQueueManager, QueueError};
use domain::TaskType;
use fred::prelude::*;
use std::{future::Future, time::Duration};

/// How long one shard may take to answer a monitoring read before it is skipped.
const SHARD_READ_TIMEOUT: Duration = Duration::from_secs(2);

impl PollingQueueManager {
    /// Number of entries (due, future and leased) in one shard queue: `ZCARD`.
    pub async fn get_queue_depth(&self, shard: u32, task: TaskType) -> Result<u64, QueueError> {
        Ok(self.pool.zcard(self.keys.shard_queue(shard, task)).await?)
    }

    /// Sum of [`get_queue_depth`](Self::get_queue_depth) over all shards. A shard that fails or
    /// times out is skipped with a warning; fails only when every shard failed.
    pub async fn get_total_queue_depth(&self, task: TaskType) -> Result<u64, QueueError> {
        self.sum_shards(task, |key| async move { self.pool.zcard(key).await })
            .await
    }

    /// Number of due entries (score <= now) over all shards: the backlog the workers are behind.
    pub async fn get_due_backlog(&self, task: TaskType) -> Result<u64, QueueError> {
        let now = to_score(self.clock.now());
        self.sum_shards(task, |key| async move {
            self.pool.zcount(key, f64::NEG_INFINITY, now).await
        })
        .await
    }

    async fn sum_shards<F, Fut>(&self, task: TaskType, read: F) -> Result<u64, QueueError>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<u64, fred::error::Error>>,
    {
        let reads = (0..self.settings.shard_count).map(|shard| {
            let fut =
                tokio::time::timeout(SHARD_READ_TIMEOUT, read(self.keys.shard_queue(shard, task)));
            async move { (shard, fut.await) }
        });
        let (mut total, mut failed, mut last_err) = (0, 0, None);
        for (shard, res) in futures::future::join_all(reads).await {
            let err = match res {
                Ok(Ok(n)) => {
                    total += n;
                    continue;
                }
                Ok(Err(e)) => e,
                Err(_) => {
                    fred::error::Error::new(fred::error::ErrorKind::Timeout, "shard read timed out")
                }
            };
            tracing::warn!(shard, task = %task, error = %err, "分片 {shard} 队列深度查询失败 (shard queue depth query failed)");
            failed += 1;
            last_err = Some(err);
        }
        match last_err {
            Some(e) if failed == self.settings.shard_count => Err(e.into()),
            _ => Ok(total),
        }
    }
}
