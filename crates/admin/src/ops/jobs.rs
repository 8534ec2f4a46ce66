//! The periodic jobs of the ops services (`docs/admin-ops.md`), built here beside the services they
//! run; the worker only registers them with its scheduler, which runs each under its singleton
//! lease: alert evaluation (30 s), the metrics history sample (1 min), the carriers' budget figures
//! (1 min), data cleanup (daily; the run itself goes on in the background under its own lease), and
//! the usage partitions created ahead (every 6 h).

use super::alert_metrics::MetricReader;
use super::budget::{BUDGET_EVERY, BudgetService, BudgetStores};
use super::cleanup::CleanupService;
use super::evaluator::{AlertEvaluator, EVALUATE_EVERY};
use super::history::HistoryService;
use super::webhook::{WebhookError, WebhookNotifier, WebhookSettings};
use crate::{AdminError, Chain};
use domain::Clock;
use domain::periodic::{BoxError, PeriodicJob};
use domain::store::{
    AlertStore, CardAdminStore, CarrierStore, CleanupStore, MetricsHistoryStore, MonitoringStore,
    PollingConfigStore,
};
use lifecycle::CardInitializer;
use polling_queue::{PollingQueueManager, RecentCounters, SingletonLease};
use std::sync::Arc;
use std::time::Duration;

/// Months of usage partitions kept created ahead of the current one.
const PARTITION_MONTHS_AHEAD: u32 = 3;

/// The stores the periodic jobs read and write.
pub struct JobStores {
    /// Read by the alert metrics and the history sample (state log, fleet counts).
    pub monitoring: Arc<dyn MonitoringStore>,
    /// The rules evaluated and their firings.
    pub alerts: Arc<dyn AlertStore>,
    /// Where the history sample writes.
    pub metrics_history: Arc<dyn MetricsHistoryStore>,
    /// The cleanup configs, logs and deletions, and the usage partitions.
    pub cleanup: Arc<dyn CleanupStore>,
    /// The carriers' limits, for their budget figures.
    pub carriers: Arc<dyn CarrierStore>,
    /// The polled cards grouped by the fields config matching reads (budget figures).
    pub card_admin: Arc<dyn CardAdminStore>,
    /// The polling configs those groups are matched against (budget figures).
    pub configs: Arc<dyn PollingConfigStore>,
}

/// The five jobs, ready for the scheduler's `with_job`, from the stores, the shard queues, the
/// per-minute counters (`recent`; the carriers' calls and budget figures live beside them), the initializer (its progress, for the initializer-failed alert), the
/// leases (the data cleanup run's own) and the clock. Fails only if the webhook client cannot
/// be built.
pub fn periodic_jobs(
    stores: JobStores,
    queue: PollingQueueManager,
    recent: RecentCounters,
    initializer: CardInitializer,
    leases: SingletonLease,
    clock: Arc<dyn Clock>,
) -> Result<Vec<Box<dyn PeriodicJob>>, WebhookError> {
    let board = recent.budget_board();
    let budget = BudgetService::new(
        BudgetStores {
            carriers: stores.carriers,
            cards: stores.card_admin,
            configs: stores.configs,
        },
        recent.carrier_calls(),
        board.clone(),
        clock.clone(),
    );
    let metrics = MetricReader::new(
        stores.monitoring.clone(),
        queue.clone(),
        recent.clone(),
        initializer,
        board,
        clock.clone(),
    );
    let notifier = WebhookNotifier::new(stores.alerts.clone(), WebhookSettings::default())?;
    let evaluator = AlertEvaluator::new(stores.alerts, metrics, notifier, clock.clone());
    let history = HistoryService::new(
        stores.metrics_history,
        stores.monitoring,
        queue,
        recent,
        clock.clone(),
    );
    let cleanup = CleanupService::new(stores.cleanup, leases, clock);
    Ok(vec![
        Box::new(AlertEvaluation(evaluator)),
        Box::new(HistorySample(history)),
        Box::new(CarrierBudgetJob(budget)),
        Box::new(DataCleanup(cleanup.clone())),
        Box::new(UsagePartitions(cleanup)),
    ])
}

/// An admin error as a job's failure. The scheduler logs a failure's own text, so that text
/// is the whole chain ([`Chain`]); the error stays inside, for whoever downcasts.
#[derive(Debug)]
struct Failed(AdminError);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&Chain(&self.0), f)
    }
}

impl std::error::Error for Failed {}

fn failed(e: AdminError) -> BoxError {
    Box::new(Failed(e))
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
        let report = self.0.evaluate().await.map_err(failed)?;
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
        self.0.sample().await.map(|_| ()).map_err(failed)
    }
}

struct CarrierBudgetJob(BudgetService);

#[async_trait::async_trait]
impl PeriodicJob for CarrierBudgetJob {
    fn name(&self) -> &'static str {
        "carrier_budget"
    }
    fn every(&self) -> Duration {
        BUDGET_EVERY
    }
    async fn run(&self) -> Result<(), BoxError> {
        let report = self.0.refresh().await.map_err(failed)?;
        let over: Vec<String> = report
            .carriers
            .iter()
            .filter(|c| c.enabled && c.round_ratio > 1.0)
            .map(|c| c.carrier_id.to_string())
            .collect();
        if !over.is_empty() {
            tracing::info!(carriers = %over.join(","), worst = report.worst_round_ratio(),
                "carrier budgets below their cards' demand");
        }
        Ok(())
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
            Err(AdminError::Conflict { .. }) => {
                tracing::info!("a data cleanup run is already going on");
                Ok(())
            }
            Err(e) => Err(failed(e)),
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
        let created = self
            .0
            .ensure_partitions(PARTITION_MONTHS_AHEAD)
            .await
            .map_err(failed)?;
        if created > 0 {
            tracing::info!(created, "usage partitions created ahead");
        }
        Ok(())
    }
}
