//! `cmp-worker run`: the engine of one node — config refresh, initializer when needed, the
//! scheduler with the four handlers and the periodic package jobs, health and metrics.

use crate::components::Components;
use anyhow::Context;
use lifecycle::{InitMode, LifecycleError};
use scheduler::{BoxError, PeriodicJob, Scheduler, SchedulerSettings};
use settings::Settings;
use std::sync::Arc;
use std::time::Duration;
use task_handlers::{HandlerDeps, HandlerSettings, PackageJobs, build_registry};

/// How long running polls may finish after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

pub(crate) async fn run(settings: Settings) -> anyhow::Result<()> {
    let metrics = ops::install_metrics()?;
    let c = Components::connect(settings).await?;
    let shutdown = ops::shutdown_token();

    let refresher = c
        .configs
        .spawn_refresher(shutdown.clone())
        .await
        .context("subscribe to config changes")?;
    let health = tokio::spawn(ops::serve(
        c.settings.worker_bind,
        ops::health_router(
            ops::Readiness {
                db: c.db.clone(),
                redis: c.redis.clone(),
            },
            metrics,
        ),
        shutdown.clone(),
    ));
    let init = tokio::spawn(initialize_if_needed(c.initializer.clone()));

    let gateway: Arc<dyn gateway::CarrierGateway> =
        Arc::new(admin::gateway_counts::CountingGateway::new(
            Arc::new(c.gateway()?),
            polling_queue::RecentCounters::new(c.redis.clone(), c.keys.clone()),
            c.clock.clone(),
        ));
    let deps = HandlerDeps {
        cards: c.stores.cards.clone(),
        packages: c.stores.packages.clone(),
        gateway: gateway.clone(),
        stop_resume: c.stop_resume(gateway),
        configs: c.configs.clone(),
        queue: c.queue.clone(),
        semaphore: c.semaphore(),
        cache: c.cache(),
        protect: c.protect_keys(),
        counters: c.counters(),
        clock: c.clock.clone(),
        settings: HandlerSettings {
            retry_interval: c.settings.retry_interval,
            ..HandlerSettings::default()
        },
    };
    let registry = build_registry(&deps);
    let jobs = Arc::new(PackageJobs::new(&deps));
    let scheduler = Scheduler::new(
        c.queue.clone(),
        registry,
        c.leases.clone(),
        c.clock.clone(),
        SchedulerSettings {
            tick: c.settings.scheduler_tick,
            batch: c.settings.scheduler_batch,
            pools: c.pool_sizes(),
            retry_interval: c.settings.retry_interval,
            shutdown_grace: SHUTDOWN_GRACE,
            backlog_every: Duration::from_secs(10),
        },
    )
    .with_job(Box::new(ActivationCheck(jobs.clone())))
    .with_job(Box::new(DataReset(jobs)));
    let scheduler = crate::admin_jobs::jobs(&c)?
        .into_iter()
        .fold(scheduler, |s, job| s.with_job(job));

    let report = scheduler.run(shutdown.clone()).await;
    shutdown.cancel();
    init.abort();
    let _ = refresher.await;
    health.await.context("health server task")??;
    tracing::info!(
        drained = report.drained,
        rescheduled = report.rescheduled,
        "worker stopped"
    );
    Ok(())
}

/// Runs the initializer at start when it never completed; another node holding its lease is
/// not an error (that node is doing it).
async fn initialize_if_needed(initializer: lifecycle::CardInitializer) {
    match initializer.needs_run().await {
        Ok(false) => return,
        Ok(true) => {}
        Err(e) => {
            tracing::warn!(error = %e, "cannot read initializer progress; not starting it");
            return;
        }
    }
    tracing::info!("queues were never initialised; running the initializer");
    match initializer.run(InitMode::Initial).await {
        Ok(r) => tracing::info!(
            processed = r.processed,
            unmatched = r.unmatched,
            added = r.added,
            secs = r.elapsed.as_secs_f64(),
            "initializer completed"
        ),
        Err(LifecycleError::LeaseHeld { .. }) => {
            tracing::info!("another node runs the initializer")
        }
        Err(e) => {
            tracing::error!(error = %e, "initializer failed; `cmp-worker init --repair` resumes it")
        }
    }
}

/// Package expiry and activation, once a minute on one node.
struct ActivationCheck(Arc<PackageJobs>);

#[async_trait::async_trait]
impl PeriodicJob for ActivationCheck {
    fn name(&self) -> &'static str {
        "package_activation"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(60)
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.0
            .activation_check()
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
}

/// Monthly data reset, checked once a minute on one node.
struct DataReset(Arc<PackageJobs>);

#[async_trait::async_trait]
impl PeriodicJob for DataReset {
    fn name(&self) -> &'static str {
        "data_reset"
    }
    fn every(&self) -> Duration {
        Duration::from_secs(60)
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.0.data_reset().await.map(|_| ()).map_err(Into::into)
    }
}
