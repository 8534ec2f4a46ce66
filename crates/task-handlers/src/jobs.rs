//! The periodic package jobs (`docs/rules.md`, "Package activation" and "Data reset"): bounded
//! store batches (each its own transaction), each followed by an evaluation of exactly the
//! cards whose packages it touched, until nothing is due. The calendar is `CMP_TIMEZONE`.

use crate::{HandlerDeps, HandlerError, telemetry};
use chrono_tz::Tz;
use domain::store::{CardStore, PackageBatch, PackageStore};
use domain::{CardId, Clock, PackageOwner};
use futures::StreamExt;
use polling_queue::CardCache;
use std::collections::BTreeSet;
use std::sync::Arc;
use stop_resume::{Action, StopResumeService, Trigger};
use tracing::{info, warn};

/// Most packages one store statement of a job changes: a run over a month-end backlog of
/// millions of packages is many short transactions, never one that locks them all.
pub const JOB_BATCH: u32 = 1_000;

/// What one run of a job did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobReport {
    /// Store batches run.
    pub batches: usize,
    /// Packages changed (expired, or reset).
    pub packages: u64,
    /// Cards and devices whose packages the batch changed.
    pub owners: usize,
    /// Cards evaluated (the cards among the owners, plus every card bound to a device among them).
    pub cards: usize,
    pub started: usize,
    pub stopped: usize,
    pub reason_changed: usize,
    /// Evaluated, nothing to do.
    pub unchanged: usize,
    /// Evaluations that failed; those cards are evaluated again by their next usage or package
    /// poll.
    pub failed: usize,
}

impl JobReport {
    fn add(&mut self, other: &JobReport) {
        self.owners += other.owners;
        self.cards += other.cards;
        self.started += other.started;
        self.stopped += other.stopped;
        self.reason_changed += other.reason_changed;
        self.unchanged += other.unchanged;
        self.failed += other.failed;
    }
}

/// Package activation check and monthly data reset. The scheduler runs each once a minute on
/// one node (singleton lease).
#[derive(Clone)]
pub struct PackageJobs {
    cards: Arc<dyn CardStore>,
    packages: Arc<dyn PackageStore>,
    stop_resume: StopResumeService,
    cache: CardCache,
    clock: Arc<dyn Clock>,
    concurrency: usize,
    timezone: Tz,
    batch: u32,
}

impl std::fmt::Debug for PackageJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackageJobs")
            .field("concurrency", &self.concurrency)
            .field("timezone", &self.timezone)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl PackageJobs {
    pub fn new(deps: &HandlerDeps) -> Self {
        Self {
            cards: deps.cards.clone(),
            packages: deps.packages.clone(),
            stop_resume: deps.stop_resume.clone(),
            cache: deps.cache.clone(),
            clock: deps.clock.clone(),
            concurrency: deps.settings.job_concurrency.max(1),
            timezone: deps.settings.timezone,
            batch: JOB_BATCH,
        }
    }

    /// Changes the batch size (tests use small batches to see the loop).
    pub fn with_batch(mut self, batch: u32) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Expired packages become `expired`; an owner left without a valid package gets its next
    /// pending one; every affected card is evaluated (`package_activation`).
    pub async fn activation_check(&self) -> Result<JobReport, HandlerError> {
        let now = self.clock.now();
        let (tz, limit) = (self.timezone, self.batch);
        self.in_batches(Trigger::PackageActivation, || {
            self.packages.expire_and_activate(now, tz, limit)
        })
        .await
    }

    /// Monthly packages due for reset start again from 0; every affected card is evaluated
    /// (`data_reset`): a card stopped for `traffic_exhausted` resumes.
    pub async fn data_reset(&self) -> Result<JobReport, HandlerError> {
        let now = self.clock.now();
        let (tz, limit) = (self.timezone, self.batch);
        self.in_batches(Trigger::DataReset, || {
            self.packages.reset_monthly(now, tz, limit)
        })
        .await
    }

    /// Runs `batch` until it changes fewer packages than the limit, evaluating the owners of
    /// each batch before the next one (a stop or resume follows its batch within seconds, and
    /// memory holds one batch of owners).
    async fn in_batches<F, Fut>(
        &self,
        trigger: Trigger,
        batch: F,
    ) -> Result<JobReport, HandlerError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = domain::store::StoreResult<PackageBatch>>,
    {
        let mut report = JobReport::default();
        loop {
            let done = batch().await?;
            report.batches += 1;
            report.packages += done.rows;
            let part = self.evaluate(done.owners, trigger).await?;
            report.add(&part);
            if done.rows < u64::from(self.batch) {
                break;
            }
        }
        info!(
            job = trigger.as_str(),
            batches = report.batches,
            packages = report.packages,
            owners = report.owners,
            cards = report.cards,
            started = report.started,
            stopped = report.stopped,
            reason_changed = report.reason_changed,
            failed = report.failed,
            "package job done"
        );
        Ok(report)
    }

    async fn evaluate(
        &self,
        owners: Vec<PackageOwner>,
        trigger: Trigger,
    ) -> Result<JobReport, HandlerError> {
        let mut report = JobReport {
            owners: owners.len(),
            ..JobReport::default()
        };
        if owners.is_empty() {
            return Ok(report);
        }
        let mut cards = BTreeSet::new();
        let mut devices = Vec::new();
        for owner in owners {
            match owner {
                PackageOwner::Card(c) => {
                    cards.insert(c);
                }
                PackageOwner::Device(d) => devices.push(d),
            }
        }
        if !devices.is_empty() {
            cards.extend(self.cards.ids_of_devices(&devices).await?);
        }
        report.cards = cards.len();
        let job = trigger.as_str();
        let mut results =
            futures::stream::iter(cards)
                .map(|card| async move {
                    (card, self.stop_resume.evaluate_and_act(card, trigger).await)
                })
                .buffer_unordered(self.concurrency);
        while let Some((card, result)) = results.next().await {
            let action = match result {
                Ok(d) => d.action,
                Err(error) => {
                    warn!(card_id = %card, job, %error, "evaluation after a package job failed");
                    report.failed += 1;
                    telemetry::job_evaluated(job, "failed");
                    continue;
                }
            };
            telemetry::job_evaluated(job, action.label());
            match action {
                Action::Started => report.started += 1,
                Action::Stopped { .. } => report.stopped += 1,
                Action::ReasonChanged { .. } => report.reason_changed += 1,
                Action::Nothing { .. } => {
                    report.unchanged += 1;
                    continue;
                }
            }
            self.invalidate(card).await;
        }
        Ok(report)
    }

    /// The card's network status changed: its cached snapshot is stale.
    async fn invalidate(&self, card: CardId) {
        if let Err(error) = self.cache.invalidate(card).await {
            warn!(card_id = %card, %error, "cannot invalidate the card cache");
        }
    }
}
