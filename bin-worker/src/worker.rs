//! `cmp-worker run`: the engine of one node — config refresh, initializer when needed, the
//! scheduler with the four handlers and the periodic jobs, health and metrics.

use crate::components::Components;
use crate::jobs::{ActivationCheck, DataReset};
use anyhow::Context;
use lifecycle::{InitMode, LifecycleError};
use scheduler::{Scheduler, SchedulerSettings};
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
    let init = tokio::spawn(initialize_then_follow_configs(
        c.initializer.clone(),
        c.reconciler(),
        shutdown.clone(),
    ));

    let gateway: Arc<dyn gateway::CarrierGateway> =
        Arc::new(admin::gateway_counts::CountingGateway::new(
            Arc::new(c.gateway()?),
            polling_queue::RecentCounters::new(c.redis.clone(), c.keys.clone()),
            c.clock.clone(),
        ));
    let deps = HandlerDeps {
        cards: c.stores.cards.clone(),
        devices: c.stores.devices.clone(),
        packages: c.stores.packages.clone(),
        gateway: gateway.clone(),
        stop_resume: c.stop_resume(gateway),
        configs: c.configs.clone(),
        queue: c.queue.clone(),
        semaphore: c.semaphore(),
        cache: c.cache(),
        protect: c.protect_keys(),
        counters: c.counters(),
        lifecycle: c.lifecycle(),
        clock: c.clock.clone(),
        settings: HandlerSettings {
            retry_interval: c.settings.retry_interval,
            timezone: c.settings.timezone,
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
    .with_semaphore(deps.semaphore.clone())
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

/// The initializer when needed, then — once the queues are initialised, here or on another
/// node — the queue reconciliation after every change of the polling configs.
async fn initialize_then_follow_configs(
    initializer: lifecycle::CardInitializer,
    reconciler: lifecycle::QueueReconciler,
    shutdown: tokio_util::sync::CancellationToken,
) {
    initialize_if_needed(initializer.clone()).await;
    // Aligning cards the initializer has not reached yet would make them all due at once
    // instead of spread over their interval.
    while !matches!(initializer.needs_run().await, Ok(false)) {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
    }
    reconciler.follow_config_changes(shutdown).await;
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
