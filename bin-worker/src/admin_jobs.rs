//! The periodic jobs of the admin services (issue 14), each under its singleton lease through
//! the scheduler: alert evaluation (30 s), the metrics history sample (1 min), data cleanup
//! (daily; the run itself goes on in the background under its own lease), and the usage
//! partitions created ahead (every 6 h).

use crate::components::Components;
use admin::alert_metrics::MetricReader;
use admin::cleanup::CleanupService;
use admin::evaluator::{AlertEvaluator, EVALUATE_EVERY};
use admin::history::HistoryService;
use admin::webhook::{WebhookNotifier, WebhookSettings};
use anyhow::Context;
use polling_queue::RecentCounters;
use scheduler::{BoxError, PeriodicJob};
use std::time::Duration;

/// Months of usage partitions kept created ahead of the current one.
const PARTITION_MONTHS_AHEAD: u32 = 3;

/// The four jobs, ready for `Scheduler::with_job`.
pub(crate) fn jobs(c: &Components) -> anyhow::Result<Vec<Box<dyn PeriodicJob>>> {
    let recent = RecentCounters::new(c.redis.clone(), c.keys.clone());
    let metrics = MetricReader::new(
        c.stores.monitoring.clone(),
        c.queue.clone(),
        recent.clone(),
        c.initializer.clone(),
        c.clock.clone(),
    );
    let notifier = WebhookNotifier::new(c.stores.alerts.clone(), WebhookSettings::default())
        .map_err(anyhow::Error::msg)
        .context("build the alert webhook client")?;
    let evaluator =
        AlertEvaluator::new(c.stores.alerts.clone(), metrics, notifier, c.clock.clone());
    let history = HistoryService::new(
        c.stores.metrics_history.clone(),
        c.stores.monitoring.clone(),
        c.queue.clone(),
        recent,
        c.clock.clone(),
    );
    let cleanup = CleanupService::new(c.stores.cleanup.clone(), c.leases.clone(), c.clock.clone());
    Ok(vec![
        Box::new(AlertEvaluation(evaluator)),
        Box::new(HistorySample(history)),
        Box::new(DataCleanup(cleanup.clone())),
        Box::new(UsagePartitions(cleanup)),
    ])
}

struct AlertEvaluation(AlertEvaluator);

#[async_trait::async_trait]
impl PeriodicJob for AlertEvaluation {
    fn name(&self) -> &'static str {
        "alert_evaluator"
    }
    fn every(&self) -> Duration {
        EVALUATE_EVERY
    }
    async fn run(&self) -> Result<(), BoxError> {
        let report = self.0.evaluate().await?;
        if !report.fired.is_empty() || !report.resolved.is_empty() {
            tracing::info!(
                fired = report.fired.len(),
                resolved = report.resolved.len(),
                firing = report.firing,
                "alert rules evaluated"
            );
        }
        Ok(())
    }
}

struct HistorySample(HistoryService);

#[async_trait::async_trait]
impl PeriodicJob for HistorySample {
    fn name(&self) -> &'static str {
        "metrics_history"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(60)
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.0.sample().await.map(|_| ()).map_err(Into::into)
    }
}

struct DataCleanup(CleanupService);

#[async_trait::async_trait]
impl PeriodicJob for DataCleanup {
    fn name(&self) -> &'static str {
        "data_cleanup"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(24 * 3600)
    }
    async fn run(&self) -> Result<(), BoxError> {
        match self.0.start_run().await {
            Ok(started) => {
                tracing::info!(run_id = started.run_id, "data cleanup run started");
                Ok(())
            }
            Err(admin::AdminError::Conflict { .. }) => {
                tracing::info!("a data cleanup run is already going on");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

struct UsagePartitions(CleanupService);

#[async_trait::async_trait]
impl PeriodicJob for UsagePartitions {
    fn name(&self) -> &'static str {
        "usage_partitions"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(6 * 3600)
    }
    async fn run(&self) -> Result<(), BoxError> {
        let created = self.0.ensure_partitions(PARTITION_MONTHS_AHEAD).await?;
        if created > 0 {
            tracing::info!(created, "usage partitions created ahead");
        }
        Ok(())
    }
}
