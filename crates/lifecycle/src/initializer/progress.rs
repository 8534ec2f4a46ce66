//! `polling:init:progress`: the initializer's progress, read by monitoring and by the next run.

use super::writer::PageCounts;
use crate::LifecycleError;
use chrono::{DateTime, Utc};
use polling_queue::InitWriter;

/// `status` of the progress hash (`docs/contract.md`, "Redis keys").
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

    fn fields(&self) -> Vec<(String, String)> {
        let mut f = vec![
            field("processed", self.processed),
            field("unmatched", self.unmatched),
            field("added", self.added),
        ];
        f.extend(
            self.shards
                .iter()
                .enumerate()
                .map(|(i, n)| (format!("shard:{i}"), n.to_string())),
        );
        f
    }
}

fn field(name: &str, value: impl ToString) -> (String, String) {
    (name.to_owned(), value.to_string())
}

pub(crate) async fn read(writer: &InitWriter) -> Result<Option<InitProgress>, LifecycleError> {
    let raw = writer.read_progress().await?;
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
    writer: &InitWriter,
    shard_count: u32,
    mode: &str,
    now: DateTime<Utc>,
) -> Result<(), LifecycleError> {
    let mut fields = Totals::new(shard_count).fields();
    fields.extend([
        field("status", InitStatus::Running.as_str()),
        field("shard_count", shard_count),
        field("total", 0),
        field("mode", mode),
        field("started_at", now.to_rfc3339()),
    ]);
    Ok(writer.replace_progress(fields).await?)
}

pub(crate) async fn set_total(writer: &InitWriter, total: u64) -> Result<(), LifecycleError> {
    Ok(writer.update_progress(vec![field("total", total)]).await?)
}

/// Records the totals after a page is written.
pub(crate) async fn page_done(writer: &InitWriter, totals: &Totals) -> Result<(), LifecycleError> {
    Ok(writer.update_progress(totals.fields()).await?)
}

/// Records the end of a run: `completed` (total := processed) or `failed` with the error.
pub(crate) async fn finish(
    writer: &InitWriter,
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
        fields.push(field("total", t.processed));
    }
    fields.extend([
        field("status", status.as_str()),
        field("finished_at", now.to_rfc3339()),
        field("error", error.unwrap_or("")),
    ]);
    Ok(writer.update_progress(fields).await?)
}
