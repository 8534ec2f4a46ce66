//! `polling:init:progress`: the initializer's progress, read by monitoring and by the next run.

use super::writer::PageCounts;
use crate::LifecycleError;
use chrono::{DateTime, Utc};
use fred::prelude::*;
use fred::types::Value;
use std::collections::HashMap;

/// `status` of the progress hash (CONTRACT.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitStatus {
    Running,
    Completed,
    Failed,
}

impl InitStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            InitStatus::Running => "running",
            InitStatus::Completed => "completed",
            InitStatus::Failed => "failed",
        }
    }
}

/// The decoded progress hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitProgress {
    pub status: Option<InitStatus>,
    /// Polling-enabled cards counted at the start; set to `processed` on completion.
    pub total: u64,
    /// Cards read and written so far (matched or not).
    pub processed: u64,
    /// Cards no config matched: not queued.
    pub unmatched: u64,
    /// Queue entries that were new (not already queued) in this run.
    pub added: u64,
    pub shard_count: Option<u32>,
    /// Matched cards per shard (`shard:{n}`), index = shard.
    pub shards: Vec<u64>,
    /// `initial` or `repair`.
    pub mode: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Why the last run failed.
    pub error: Option<String>,
}

/// Running totals of a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Totals {
    pub(crate) processed: u64,
    pub(crate) unmatched: u64,
    pub(crate) added: u64,
    pub(crate) shards: Vec<u64>,
}

impl Totals {
    pub(crate) fn new(shard_count: u32) -> Self {
        Self {
            shards: vec![0; shard_count as usize],
            ..Self::default()
        }
    }

    pub(crate) fn add(&mut self, page: &PageCounts, added: u64) {
        self.processed += page.processed;
        self.unmatched += page.unmatched;
        self.added += added;
        for (sum, n) in self.shards.iter_mut().zip(&page.shards) {
            *sum += n;
        }
    }

    fn fields(&self) -> Vec<(String, Value)> {
        let mut f = vec![
            ("processed".to_owned(), Value::from(self.processed as i64)),
            ("unmatched".to_owned(), Value::from(self.unmatched as i64)),
            ("added".to_owned(), Value::from(self.added as i64)),
        ];
        f.extend(
            self.shards
                .iter()
                .enumerate()
                .map(|(i, n)| (format!("shard:{i}"), Value::from(*n as i64))),
        );
        f
    }
}

pub(crate) async fn read(pool: &Pool, key: &str) -> Result<Option<InitProgress>, LifecycleError> {
    let raw: HashMap<String, String> = pool.hgetall(key).await?;
    if raw.is_empty() {
        return Ok(None);
    }
    let num = |field: &str| -> Result<u64, LifecycleError> {
        raw.get(field)
            .map_or(Ok(0), |v| v.parse().map_err(|_| corrupt(field, v)))
    };
    let time = |field: &str| {
        raw.get(field)
            .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
            .map(|t| t.to_utc())
    };
    let status = match raw.get("status").map(String::as_str) {
        None => None,
        Some("running") => Some(InitStatus::Running),
        Some("completed") => Some(InitStatus::Completed),
        Some("failed") => Some(InitStatus::Failed),
        Some(other) => return Err(corrupt("status", other)),
    };
    let shard_count = match raw.get("shard_count") {
        Some(v) => Some(v.parse::<u32>().map_err(|_| corrupt("shard_count", v))?),
        None => None,
    };
    let shards = (0..shard_count.unwrap_or(0))
        .map(|i| num(&format!("shard:{i}")))
        .collect::<Result<_, _>>()?;
    Ok(Some(InitProgress {
        status,
        total: num("total")?,
        processed: num("processed")?,
        unmatched: num("unmatched")?,
        added: num("added")?,
        shard_count,
        shards,
        mode: raw.get("mode").cloned(),
        started_at: time("started_at"),
        finished_at: time("finished_at"),
        error: raw.get("error").filter(|e| !e.is_empty()).cloned(),
    }))
}

fn corrupt(field: &str, value: &str) -> LifecycleError {
    LifecycleError::CorruptProgress {
        field: field.to_owned(),
        value: value.to_owned(),
    }
}

/// Replaces the hash with a fresh `running` record.
pub(crate) async fn start(
    pool: &Pool,
    key: &str,
    shard_count: u32,
    mode: &str,
    now: DateTime<Utc>,
) -> Result<(), LifecycleError> {
    let mut fields = Totals::new(shard_count).fields();
    fields.extend([
        (
            "status".to_owned(),
            Value::from_static_str(InitStatus::Running.as_str()),
        ),
        (
            "shard_count".to_owned(),
            Value::from(i64::from(shard_count)),
        ),
        ("total".to_owned(), Value::from(0)),
        ("mode".to_owned(), Value::from(mode)),
        ("started_at".to_owned(), Value::from(now.to_rfc3339())),
    ]);
    let trx = pool.next().multi();
    let _: () = trx.del(key).await?;
    let _: () = trx.hset(key, fields).await?;
    let _: Vec<Value> = trx.exec(true).await?;
    Ok(())
}

pub(crate) async fn set_total(pool: &Pool, key: &str, total: u64) -> Result<(), LifecycleError> {
    let _: () = pool.hset(key, ("total", total as i64)).await?;
    Ok(())
}

/// Records the totals after a page is written.
pub(crate) async fn page_done(
    pool: &Pool,
    key: &str,
    totals: &Totals,
) -> Result<(), LifecycleError> {
    let _: () = pool.hset(key, totals.fields()).await?;
    Ok(())
}

/// Records the end of a run: `completed` (total := processed) or `failed` with the error.
pub(crate) async fn finish(
    pool: &Pool,
    key: &str,
    totals: Option<&Totals>,
    error: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), LifecycleError> {
    let mut fields = totals.map(Totals::fields).unwrap_or_default();
    let status = if error.is_some() {
        InitStatus::Failed
    } else {
        InitStatus::Completed
    };
    if let (Some(t), None) = (totals, error) {
        fields.push(("total".to_owned(), Value::from(t.processed as i64)));
    }
    fields.extend([
        ("status".to_owned(), Value::from_static_str(status.as_str())),
        ("finished_at".to_owned(), Value::from(now.to_rfc3339())),
        ("error".to_owned(), Value::from(error.unwrap_or(""))),
    ]);
    let _: () = pool.hset(key, fields).await?;
    Ok(())
}
