//! `cmp-worker run`: the engine of one node — config refresh, initializer when needed, the
//! scheduler with the four handlers and the periodic jobs, health and metrics.

use crate::budget::GatewayBudget;
use crate::components::Components;
use anyhow::Context;
use lifecycle::{InitWatchdog, QueueCheck, WATCH_EVERY};
use scheduler::{Scheduler, SchedulerSettings};
use settings::Settings;
use std::sync::Arc;
use std::time::Duration;
use task_handlers::{
    ActivationCheck, CarrierSync, DataReset, HandlerDeps, HandlerSettings, PackageJobs,
    build_registry,
};

/// How long running polls may finish after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

pub(crate) async fn run(settings: Settings) -> anyhow::Result<()> {
    let metrics = ops::install_metrics()?;
    let c = Components::connect(settings).await?;
    let shutdown = ops::shutdown_token();
    let server_clock = c.server_clock.clone();
    let follow_clock = tokio::spawn(async move {
        server_clock
            .follow(polling_queue::RedisClock::FOLLOW_EVERY, |offset| {
                metrics::gauge!(crate::metrics::CLOCK_OFFSET)
                    .set(offset.num_microseconds().unwrap_or(0) as f64 / 1e6);
            })
            .await;
    });

    let refresher = c
        .core
        .configs
        .spawn_refresher(shutdown.clone())
        .await
        .context("subscribe to config changes")?;
    // Initialises the queues at start when needed, and again whenever they are lost.
    let watchdog = InitWatchdog::new(c.initializer.clone(), WATCH_EVERY);
    let probe = watchdog.clone();
    // Every card's calls go to its carrier's adapter (`tb_carrier`); carriers without a row
    // speak the project's own protocol at CMP_GATEWAY_URL.
    let http = Arc::new(c.gateway()?);
    let carriers = crate::carriers::router(&c, http.clone()).await;
    let command_bound = gateway::carriers::command_bound(http.config(), &carriers.accounts());
    let carriers_task = crate::carriers::spawn(&c, carriers.clone(), shutdown.clone());
    let readiness = ops::Readiness::new(c.db.clone(), c.core.redis.clone())
        .with_probe("queues", move || {
            let probe = probe.clone();
            async move { probe.readiness().await }
        })
        .with_detail(
            "carriers",
            crate::carriers::readiness_detail(carriers.clone()),
        );
    let health = tokio::spawn(ops::serve(
        c.settings.worker_bind,
        ops::health_router(readiness, metrics),
        shutdown.clone(),
    ));
    let watch = tokio::spawn(watchdog.run(shutdown.clone()));
    let init = tokio::spawn(follow_configs_once_initialised(
        c.initializer.clone(),
        c.reconciler(),
        shutdown.clone(),
    ));

    // The queries of concurrent polls of a batch-capable carrier go as one call per batch.
    let batching = Arc::new(gateway::BatchingGateway::new(
        carriers.clone(),
        c.settings.batch_linger,
    ));
    let gateway: Arc<dyn gateway::CarrierGateway> =
        Arc::new(admin::gateway_counts::CountingGateway::new(
            batching,
            polling_queue::RecentCounters::new(c.core.redis.clone(), c.core.keys.clone()),
            c.core.clock.clone(),
        ));
    let deps = HandlerDeps {
        cards: c.core.stores.cards.clone(),
        devices: c.core.stores.devices.clone(),
        packages: c.core.stores.packages.clone(),
        gateway: gateway.clone(),
        stop_resume: c.stop_resume(gateway, command_bound),
        configs: c.core.configs.clone(),
        queue: c.core.queue.clone(),
        semaphore: c.semaphore(),
        cache: c.cache(),
        protect: c.core.protect_keys(),
        counters: c.counters(),
        lifecycle: c.core.lifecycle(),
        clock: c.core.clock.clone(),
        settings: HandlerSettings {
            retry_interval: c.settings.retry_interval,
            timezone: c.settings.timezone,
            ..HandlerSettings::default()
        },
    };
    let registry = build_registry(&deps);
    let jobs = Arc::new(PackageJobs::new(&deps));
    let scheduler = Scheduler::new(
        c.core.queue.clone(),
        registry,
        c.leases.clone(),
        c.core.clock.clone(),
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
    .with_budget(Arc::new(GatewayBudget::new(http, carriers.clone())))
    .with_job(Box::new(ActivationCheck(jobs.clone())))
    .with_job(Box::new(DataReset(jobs)));
    let scheduler = if c.settings.carrier_sync_pages == 0 {
        scheduler
    } else {
        scheduler.with_job(Box::new(CarrierSync::new(
            deps.polling(),
            c.core.stores.carriers.clone(),
            c.core.stores.syncs.clone(),
            c.settings.carrier_sync_pages,
        )))
    };
    let scheduler = admin::jobs::periodic_jobs(
        admin::jobs::JobStores {
            monitoring: c.core.stores.monitoring.clone(),
            alerts: c.core.stores.alerts.clone(),
            metrics_history: c.core.stores.metrics_history.clone(),
            cleanup: c.core.stores.cleanup.clone(),
            carriers: c.core.stores.carriers.clone(),
            card_admin: c.core.stores.card_admin.clone(),
            configs: c.core.stores.configs.clone(),
        },
        c.core.queue.clone(),
        polling_queue::RecentCounters::new(c.core.redis.clone(), c.core.keys.clone()),
        c.initializer.clone(),
        c.leases.clone(),
        c.core.clock.clone(),
    )
    .context("build the alert webhook client")?
    .into_iter()
    .fold(scheduler, |s, job| s.with_job(job));
    let scheduler = if c.settings.check_interval.is_zero() {
        scheduler
    } else {
        scheduler.with_job(Box::new(QueueCheck::new(
            crate::check::checker(&c, false),
            c.initializer.clone(),
            c.settings.check_interval,
        )))
    };

    let report = scheduler.run(shutdown.clone()).await;
    shutdown.cancel();
    init.abort();
    watch.abort();
    follow_clock.abort();
    carriers_task.abort();
    let _ = refresher.await;
    health.await.context("health server task")??;
    tracing::info!(
        drained = report.drained,
        rescheduled = report.rescheduled,
        "worker stopped"
    );
    Ok(())
}

/// Once the queues are initialised (by the watchdog, here or on another node), the queue
/// reconciliation after every change of the polling configs.
async fn follow_configs_once_initialised(
    initializer: lifecycle::CardInitializer,
    reconciler: lifecycle::QueueReconciler,
    shutdown: tokio_util::sync::CancellationToken,
) {
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
