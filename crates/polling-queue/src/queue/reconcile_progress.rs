//! `polling:reconcile:progress`: where the queue reconciliation after a config change stands,
//! for operators (the monitoring API) and for the nodes deciding whether it already ran.

use crate::{Keys, QueueError, RedisKey};
use chrono::{DateTime, Utc};
use fred::prelude::*;
use std::collections::HashMap;

/// The state of the last (or running) reconciliation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileState {
    /// `running`, `completed` or `failed`; empty when none ever ran.
    pub status: String,
    /// The config fingerprint the run aligns the queues to.
    pub fingerprint: u64,
    pub processed: u64,
    pub added: u64,
    pub removed: u64,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
}

impl ReconcileState {
    /// Whether a run aligned the queues to `fingerprint` to the end.
    pub fn completed_for(&self, fingerprint: u64) -> bool {
        self.status == "completed" && self.fingerprint == fingerprint
    }
}

/// Reads and writes `polling:reconcile:progress`.
#[derive(Debug, Clone)]
pub struct ReconcileProgress {
    pool: Pool,
    key: String,
}

impl ReconcileProgress {
    pub fn new(pool: Pool, keys: &Keys) -> Self {
        Self {
            pool,
            key: keys.render(&RedisKey::ReconcileProgress),
        }
    }

    /// A run for `fingerprint` starts: counters at zero.
    pub async fn start(&self, fingerprint: u64, at: DateTime<Utc>) -> Result<(), QueueError> {
        let trx = self.pool.next().multi();
        let _: () = trx.del(&self.key).await?;
        let _: () = trx
            .hset(
                &self.key,
                vec![
                    ("status", "running".to_owned()),
                    ("fingerprint", fingerprint.to_string()),
                    ("processed", "0".to_owned()),
                    ("added", "0".to_owned()),
                    ("removed", "0".to_owned()),
                    ("started_at", at.to_rfc3339()),
                ],
            )
            .await?;
        let _: Vec<fred::types::Value> = trx.exec(true).await?;
        Ok(())
    }

    /// The counters after a batch.
    pub async fn update(&self, processed: u64, added: u64, removed: u64) -> Result<(), QueueError> {
        let _: () = self
            .pool
            .hset(
                &self.key,
                vec![
                    ("processed", processed.to_string()),
                    ("added", added.to_string()),
                    ("removed", removed.to_string()),
                ],
            )
            .await?;
        Ok(())
    }

    /// The run ended: `completed`, or `failed` with the error.
    pub async fn finish(&self, at: DateTime<Utc>, error: Option<&str>) -> Result<(), QueueError> {
        let mut fields = vec![
            (
                "status",
                if error.is_some() {
                    "failed"
                } else {
                    "completed"
                }
                .to_owned(),
            ),
            ("finished_at", at.to_rfc3339()),
        ];
        if let Some(e) = error {
            fields.push(("error", e.to_owned()));
        }
        let _: () = self.pool.hset(&self.key, fields).await?;
        Ok(())
    }

    pub async fn read(&self) -> Result<ReconcileState, QueueError> {
        let raw: HashMap<String, String> = self.pool.hgetall(&self.key).await?;
        let num = |f: &str| raw.get(f).and_then(|v| v.parse().ok()).unwrap_or(0);
        let time = |f: &str| {
            raw.get(f)
                .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        Ok(ReconcileState {
            status: raw.get("status").cloned().unwrap_or_default(),
            fingerprint: num("fingerprint"),
            processed: num("processed"),
            added: num("added"),
            removed: num("removed"),
            started_at: time("started_at"),
            finished_at: time("finished_at"),
            error: raw.get("error").cloned(),
        })
    }
}

impl crate::PollingQueueManager {
    /// The reconciliation's progress on the same Redis and key prefix as these queues.
    pub fn reconcile_progress(&self) -> ReconcileProgress {
        ReconcileProgress::new(self.pool.clone(), &self.keys)
    }
}
