//! [`QueueReconciler`]: after a polling config is created, edited, enabled, disabled or
//! deleted, every card's queue membership is aligned with the config it matches now
//! (`docs/rules.md`, "Lifecycle", third row).
//!
//! The run streams the polling-enabled cards by id in keyset pages, matches each against the
//! configs in force and aligns the page in one pipeline (`ZADD NX` of the types now scheduled,
//! due now; `ZREM` of the others). It is idempotent: entries that are right keep their scores,
//! so a run repeated, interrupted or overlapping with polls changes nothing twice. One node
//! runs it at a time (lease `polling:lease:reconcile`, renewed after every page), and
//! `polling:reconcile:progress` says where it stands and for which configs
//! ([`ConfigSnapshot::fingerprint`]), so the other nodes know it already ran.
//!
//! A change of interval alone needs no run: each card takes its new interval when it is next
//! rescheduled.
//!
//! [`ConfigSnapshot::fingerprint`]: polling_config::ConfigSnapshot::fingerprint

use crate::LifecycleError;
use domain::store::CardStore;
use domain::{CardId, Clock};
use polling_config::PollingConfigManager;
use polling_queue::{Aligned, LeaseToken, PollingQueueManager, ReconcileProgress, SingletonLease};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The lease of the reconciliation (`polling:lease:reconcile`).
pub const RECONCILE_JOB: &str = "reconcile";

/// Settings of the reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconcileSettings {
    /// Cards per page: one keyset read and one pipeline each.
    pub page_size: u32,
    /// TTL of the lease, restarted after every page.
    pub lease_ttl: Duration,
    /// How often a node that lost the race for the lease looks again whether the run it waits
    /// for has completed.
    pub retry: Duration,
}

impl Default for ReconcileSettings {
    fn default() -> Self {
        Self {
            page_size: 10_000,
            lease_ttl: Duration::from_secs(30),
            retry: Duration::from_secs(1),
        }
    }
}

/// What one run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReconcileReport {
    pub processed: u64,
    pub aligned: Aligned,
}

/// Aligns the queues of the whole fleet with the configs in force.
#[derive(Clone)]
pub struct QueueReconciler {
    cards: Arc<dyn CardStore>,
    queue: PollingQueueManager,
    configs: PollingConfigManager,
    leases: SingletonLease,
    progress: ReconcileProgress,
    clock: Arc<dyn Clock>,
    settings: ReconcileSettings,
}

impl std::fmt::Debug for QueueReconciler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueReconciler")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl QueueReconciler {
    pub fn new(
        cards: Arc<dyn CardStore>,
        queue: PollingQueueManager,
        configs: PollingConfigManager,
        leases: SingletonLease,
        clock: Arc<dyn Clock>,
        settings: ReconcileSettings,
    ) -> Self {
        let progress = queue.reconcile_progress();
        Self {
            cards,
            queue,
            configs,
            leases,
            progress,
            clock,
            settings,
        }
    }

    pub fn progress(&self) -> &ReconcileProgress {
        &self.progress
    }

    /// Makes sure a run for the configs in force has completed somewhere in the cluster: runs
    /// it here if this node wins the lease, else waits for the winner's run (and takes over if
    /// that run fails or its node dies). Returns this node's report, if it ran.
    pub async fn ensure_current(
        &self,
        shutdown: &CancellationToken,
    ) -> Result<Option<ReconcileReport>, LifecycleError> {
        loop {
            let fingerprint = self.configs.snapshot().fingerprint();
            if self.progress.read().await?.completed_for(fingerprint) {
                return Ok(None);
            }
            if let Some(lease) = self
                .leases
                .try_acquire(RECONCILE_JOB, self.settings.lease_ttl)
                .await?
            {
                let report = self.run_holding(&lease, shutdown).await;
                if let Err(error) = self.leases.release(lease).await {
                    tracing::debug!(%error, "reconcile lease not released; it expires");
                }
                return report.map(Some);
            }
            tokio::select! {
                () = shutdown.cancelled() => return Ok(None),
                () = tokio::time::sleep(self.settings.retry) => {}
            }
        }
    }

    /// One whole run, holding `lease`. Records `completed` or `failed` in the progress hash.
    async fn run_holding(
        &self,
        lease: &LeaseToken,
        shutdown: &CancellationToken,
    ) -> Result<ReconcileReport, LifecycleError> {
        let snapshot = self.configs.snapshot();
        let fingerprint = snapshot.fingerprint();
        self.progress.start(fingerprint, self.clock.now()).await?;
        let started = std::time::Instant::now();
        let result = self.pages(&snapshot, lease, shutdown).await;
        let error = result.as_ref().err().map(ToString::to_string);
        self.progress
            .finish(self.clock.now(), error.as_deref())
            .await?;
        match &result {
            Ok(r) => tracing::info!(
                processed = r.processed,
                added = r.aligned.added,
                removed = r.aligned.removed,
                ms = started.elapsed().as_millis() as u64,
                "queues reconciled with the polling configs"
            ),
            Err(error) => tracing::warn!(%error, "queue reconciliation failed"),
        }
        result
    }

    async fn pages(
        &self,
        snapshot: &polling_config::ConfigSnapshot,
        lease: &LeaseToken,
        shutdown: &CancellationToken,
    ) -> Result<ReconcileReport, LifecycleError> {
        let mut report = ReconcileReport::default();
        let mut after: Option<CardId> = None;
        loop {
            if shutdown.is_cancelled() {
                return Err(LifecycleError::Interrupted);
            }
            let page = self
                .cards
                .page_polling_enabled(after, self.settings.page_size)
                .await?;
            let Some(last) = page.last() else {
                return Ok(report);
            };
            after = Some(last.id);
            let wanted: Vec<_> = page
                .iter()
                .map(|card| (card.id, snapshot.scheduled_types(card)))
                .collect();
            let now = self.clock.now();
            let mut aligned = self.queue.align(&wanted, now).await?;
            if aligned.removed > 0 {
                // The page was read before a poll changed some card's facts and aligned it:
                // what this page removed is checked against the facts as they are now.
                let removing: Vec<CardId> = wanted
                    .iter()
                    .filter(|(_, types)| types.contains(&false))
                    .map(|(card, _)| *card)
                    .collect();
                aligned.added += crate::facts::restore_wanted(
                    self.cards.as_ref(),
                    &self.queue,
                    snapshot,
                    &removing,
                    now,
                )
                .await?;
            }
            report.aligned.add(aligned);
            report.processed += page.len() as u64;
            self.progress
                .update(
                    report.processed,
                    report.aligned.added,
                    report.aligned.removed,
                )
                .await?;
            if !self.leases.renew(lease).await? {
                return Err(LifecycleError::LeaseLost {
                    job: RECONCILE_JOB.to_owned(),
                });
            }
        }
    }

    /// Runs [`ensure_current`](Self::ensure_current) at start and after every change of the
    /// configs in force, until `shutdown`. Errors are logged and retried after `retry`.
    pub async fn follow_config_changes(self, shutdown: CancellationToken) {
        let mut changes = self.configs.watch_changes();
        loop {
            match self.ensure_current(&shutdown).await {
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "queue reconciliation not done; trying again");
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        () = tokio::time::sleep(self.settings.retry) => continue,
                    }
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
        }
    }
}
