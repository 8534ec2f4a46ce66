//! [`InitWatchdog`]: notices that the queues were lost and re-initialises them by itself.
//!
//! Redis restarted without persistence (or failed over to an empty replica) takes
//! `polling:init:progress` with the queues. Every `every` the watchdog reads the progress hash;
//! when no run has completed (the hash is gone, failed, or a dead node's run stopped half-way)
//! it runs the initializer. The singleton lease makes that once cluster-wide: the nodes that
//! lose the race see `LeaseHeld` and look again at the next tick. A node starting for the first
//! time takes the same path (the first tick is immediate).
//!
//! On Redis Cluster one node can lose its data alone (it restarts empty, or its master fails
//! over to a replica that had not synced) while the progress hash, on another node, still says
//! completed. A completed run leaves a canary in every hash slot that holds a shard queue
//! (`polling:init:canary:{tag}`); a canary gone under a completed run means its slot's node
//! lost its keys, and the watchdog runs the initializer in repair mode (`ZADD NX`: the cards
//! still queued elsewhere keep their scores). A queue emptied on purpose (its last card
//! removed, a config unscheduling a type) leaves the canaries alone.
//!

use super::{CardInitializer, InitMode, InitProgress, InitStatus};
use crate::LifecycleError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the worker looks whether the queues are still initialised.
pub const WATCH_EVERY: Duration = Duration::from_secs(10);

/// Runs the initializer whenever no run has completed; see the module doc.
#[derive(Debug, Clone)]
pub struct InitWatchdog {
    initializer: CardInitializer,
    every: Duration,
    /// A completed run was seen and then was gone: the queues were lost.
    lost: Arc<AtomicBool>,
    /// A completed run was seen at least once by this node.
    seen_completed: Arc<AtomicBool>,
}

impl InitWatchdog {
    pub fn new(initializer: CardInitializer, every: Duration) -> Self {
        Self {
            initializer,
            every,
            lost: Arc::default(),
            seen_completed: Arc::default(),
        }
    }

    /// Whether the queues were lost and are not initialised again yet.
    pub fn reinitialising(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Looks now, then every `every`, until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(error) = self.look().await {
                tracing::warn!(%error, "cannot tell whether the queues are initialised");
            }
        }
    }

    /// One look: runs the initializer if no run has completed, in repair mode if one has but
    /// a canary is gone.
    pub async fn look(&self) -> Result<(), LifecycleError> {
        let progress = self.initializer.progress().await?;
        let mode = if progress
            .as_ref()
            .is_some_and(|p| p.status == Some(InitStatus::Completed))
        {
            let (missing, of) = self.initializer.writer.missing_canaries().await?;
            if missing == 0 {
                self.seen_completed.store(true, Ordering::Relaxed);
                self.lost.store(false, Ordering::Relaxed);
                return Ok(());
            }
            if !self.lost.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    missing,
                    of,
                    "queue slots lost their keys under a completed initialisation (a Redis node restarted empty or failed over to a replica that held nothing); repairing"
                );
            }
            InitMode::Repair
        } else {
            if self.seen_completed.load(Ordering::Relaxed)
                && !self.lost.swap(true, Ordering::Relaxed)
            {
                tracing::warn!(
                    progress = ?progress,
                    "the queues were lost (no completed initialisation in Redis any more); re-initialising"
                );
            }
            InitMode::Initial
        };
        match self.initializer.run(mode).await {
            Ok(report) => {
                tracing::info!(
                    processed = report.processed,
                    unmatched = report.unmatched,
                    added = report.added,
                    secs = report.elapsed.as_secs_f64(),
                    "initializer completed"
                );
                self.seen_completed.store(true, Ordering::Relaxed);
                self.lost.store(false, Ordering::Relaxed);
                Ok(())
            }
            // Another node runs it, or finished it since we read the progress.
            Err(LifecycleError::LeaseHeld { .. } | LifecycleError::AlreadyCompleted) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// The readiness part "queues" as this node sees it (says "reinitialising" after a loss).
    pub async fn readiness(&self) -> Result<(), String> {
        let progress = self
            .initializer
            .progress()
            .await
            .map_err(|e| format!("cannot read the initializer progress: {e}"))?;
        describe(progress.as_ref(), self.reinitialising())?;
        let (missing, of) = self
            .initializer
            .writer
            .missing_canaries()
            .await
            .map_err(|e| format!("cannot read the queue canaries: {e}"))?;
        if missing > 0 {
            return Err(format!(
                "reinitialising: {missing} of {of} queue slots lost their keys; repairing"
            ));
        }
        Ok(())
    }
}

fn describe(progress: Option<&InitProgress>, lost: bool) -> Result<(), String> {
    let verb = if lost {
        "reinitialising (the queues were lost)"
    } else {
        "initialising"
    };
    match progress {
        Some(p) if p.status == Some(InitStatus::Completed) => Ok(()),
        None if lost => Err(format!("{verb}: waiting for the initializer to start")),
        None => Err("not initialised: no initializer run recorded".to_owned()),
        Some(p) if p.status == Some(InitStatus::Failed) => Err(format!(
            "{verb}: the last initializer run failed ({}); retrying",
            p.error.as_deref().unwrap_or("no error recorded")
        )),
        Some(p) => Err(format!(
            "{verb}: {} of {} cards processed",
            p.processed, p.total
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_completed_run_is_ready() {
        let completed = InitProgress {
            status: Some(InitStatus::Completed),
            ..InitProgress::default()
        };
        assert_eq!(describe(Some(&completed), false), Ok(()));
        let running = InitProgress {
            status: Some(InitStatus::Running),
            processed: 5,
            total: 10,
            ..InitProgress::default()
        };
        let why = describe(Some(&running), true).err().unwrap_or_default();
        assert!(why.starts_with("reinitialising"), "{why}");
        assert!(why.contains("5 of 10"), "{why}");
        assert!(describe(None, false).is_err());
        assert!(describe(None, true).is_err_and(|w| w.starts_with("reinitialising")));
    }
}
