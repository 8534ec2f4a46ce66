//! Background card imports (`POST /cards/import?background=true`): the replica that takes the
//! request answers `202` with the job at once, runs the import, and writes the job's state and
//! progress to Redis (`polling:import:{id}`, 24 h) at each phase, so `GET /cards/import/{job_id}`
//! on any replica shows how far it got and, at the end, its report or its problem.
//!
//! The import itself is the one of the synchronous route (the same checks, one transaction for
//! the rows): a replica that dies mid-import leaves either every good row written or none, and
//! its job stays `running` with an `updated_at` that stops moving (shown as `lost` after
//! [`LOST_AFTER`]). Cards written but not yet queued then are found by the periodic queue check.

use crate::error::{Problem, problem_of};
use admin::{Admin, ImportBody, ImportMode, ImportProgress, ImportReport};
use chrono::{DateTime, Utc};
use fred::clients::Pool;
use fred::interfaces::KeysInterface;
use fred::types::Expiration;
use polling_queue::{Keys, RedisKey};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a finished (or lost) job can still be read.
const JOB_TTL: Duration = Duration::from_secs(24 * 3600);
/// A running job whose replica wrote nothing for this long is shown as `lost`.
pub(crate) const LOST_AFTER: Duration = Duration::from_secs(300);

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JobState {
    Running,
    /// The report is final.
    Done,
    /// Refused (`problem`); nothing was written.
    Failed,
    /// Its replica stopped writing while it ran (killed or cut off): every good row or none
    /// was written; list the cards to know.
    Lost,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ImportJob {
    pub(crate) id: String,
    pub(crate) state: JobState,
    pub(crate) mode: ImportMode,
    pub(crate) progress: ImportProgress,
    pub(crate) report: Option<ImportReport>,
    pub(crate) problem: Option<Problem>,
    pub(crate) started_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
}

/// The jobs in Redis. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ImportJobs {
    redis: Pool,
    keys: Keys,
}

impl ImportJobs {
    pub(crate) fn new(redis: Pool, keys: Keys) -> Self {
        Self { redis, keys }
    }

    fn key(&self, id: &str) -> String {
        self.keys.render(&RedisKey::ImportJob { id: id.to_owned() })
    }

    async fn save(&self, job: &ImportJob) -> Result<(), fred::error::Error> {
        let json = serde_json::to_string(job)
            .map_err(|e| fred::error::Error::new(fred::error::ErrorKind::Parse, e.to_string()))?;
        let ttl = i64::try_from(JOB_TTL.as_secs()).unwrap_or(i64::MAX);
        self.redis
            .set(
                self.key(&job.id),
                json,
                Some(Expiration::EX(ttl)),
                None,
                false,
            )
            .await
    }

    /// A job; `None` when unknown or expired. A running job its replica stopped writing is
    /// answered `lost`.
    pub(crate) async fn find(&self, id: &str) -> Result<Option<ImportJob>, fred::error::Error> {
        let json: Option<String> = self.redis.get(self.key(id)).await?;
        let Some(mut job) = json.and_then(|j| serde_json::from_str::<ImportJob>(&j).ok()) else {
            return Ok(None);
        };
        let quiet = (Utc::now() - job.updated_at).to_std().unwrap_or_default();
        if job.state == JobState::Running && quiet > LOST_AFTER {
            job.state = JobState::Lost;
        }
        Ok(Some(job))
    }

    /// Records a new job and runs it in the background; the job as first written.
    pub(crate) async fn start(
        &self,
        admin: Admin,
        body: ImportBody,
        mode: ImportMode,
    ) -> Result<ImportJob, fred::error::Error> {
        let now = Utc::now();
        let job = ImportJob {
            id: crate::keys::random_hex::<16>(),
            state: JobState::Running,
            mode,
            progress: ImportProgress::start(body.cards.len()),
            report: None,
            problem: None,
            started_at: now,
            updated_at: now,
        };
        self.save(&job).await?;
        let jobs = self.clone();
        let first = job.clone();
        tokio::spawn(async move { jobs.run(admin, body, job).await });
        Ok(first)
    }

    /// Runs the import, writing the job at each phase and at the end.
    async fn run(&self, admin: Admin, body: ImportBody, mut job: ImportJob) {
        let (tx, mut rx) = tokio::sync::watch::channel(job.progress);
        let import = async {
            let result = admin.import_cards_watched(&body, job.mode, Some(&tx)).await;
            drop(tx);
            result
        };
        let watch = {
            let mut job = job.clone();
            async move {
                while rx.changed().await.is_ok() {
                    job.progress = *rx.borrow_and_update();
                    job.updated_at = Utc::now();
                    if let Err(e) = self.save(&job).await {
                        tracing::warn!(job = %job.id, error = %e, "cannot write an import's progress");
                    }
                }
            }
        };
        let (result, ()) = tokio::join!(import, watch);
        match result {
            Ok(report) => {
                job.progress.phase = admin::ImportPhase::Done;
                job.progress.rejected = report.rejected.len();
                job.progress.imported = report.imported;
                job.progress.enqueued = report.enqueued;
                job.state = JobState::Done;
                job.report = Some(report);
            }
            Err(e) => {
                job.state = JobState::Failed;
                job.problem = Some(problem_of(e));
            }
        }
        job.updated_at = Utc::now();
        tracing::info!(job = %job.id, state = ?job.state, imported = job.progress.imported,
            rejected = job.progress.rejected, "background import finished");
        if let Err(e) = self.save(&job).await {
            tracing::error!(job = %job.id, error = %e, "cannot write an import's outcome");
        }
    }
}
