//! The worker as `cmp-worker run` wires it (bin-worker's components.rs and worker.rs), for the
//! scenarios that poll end to end: the real stores on a pool of the worker's default size,
//! `StopResumeService`, `HttpGateway` (with the Redis rate limiter, unlimited) against a
//! gateway-sim, the four real handlers from `build_registry` (each wrapped in a [`Counting`]
//! probe) and the real `Scheduler`.

use crate::probes::{Counting, TimedGateway};
use anyhow::Context;
use domain::CarrierAccount;
use domain::{Clock, TaskType};
use fred::prelude::Pool;
use gateway::carriers::{AdapterContext, CarrierRouter};
use gateway::{BatchingGateway, GatewayConfig, HttpGateway};
use polling_config::PollingConfigManager;
use polling_queue::{
    CardCache, ConcurrencySemaphore, Keys, PollingQueueManager, QueueSettings, RedisRateLimiter,
    SemaphoreSettings, SingletonLease, TaskCounters,
};
use scheduler::{Scheduler, SchedulerSettings};
use std::sync::Arc;
use std::time::Duration;
use stop_resume::StopResumeSettings;
use task_handlers::{HandlerDeps, HandlerSettings, Registry, TaskHandler, build_registry};
use wiring::Core;

/// The worker's own dispatch budget (bin-worker is a binary crate: its module is compiled here
/// as it is there, so the benchmark paces its dispatch exactly as a node does).
#[path = "../../bin-worker/src/budget.rs"]
mod gateway_budget;
use gateway_budget::GatewayBudget;

/// The worker's default `CMP_DATABASE_MAX_CONNECTIONS`.
pub(crate) const WORKER_DB_POOL: u32 = 16;

/// One wired worker node.
pub(crate) struct Worker {
    pub(crate) queue: PollingQueueManager,
    pub(crate) configs: PollingConfigManager,
    /// The four real handlers, counted, by task index.
    pub(crate) counting: [Arc<Counting>; 4],
    /// The gateway client, timed.
    pub(crate) gateway: Arc<TimedGateway>,
    pub(crate) scheduler: Scheduler,
}

/// The carriers configured on a node (`tb_carrier`) and its `CMP_BATCH_LINGER_MS`.
#[derive(Default)]
pub(crate) struct Carriers {
    pub(crate) accounts: Vec<CarrierAccount>,
    pub(crate) linger: Duration,
}

/// Wires a worker node over `stores` and `redis` (keys under `keys`), polling the gateway at
/// `gateway_url`, with the scheduler `settings`.
pub(crate) async fn wire(
    stores: &store::Stores,
    redis: &Pool,
    keys: &Keys,
    gateway_url: String,
    clock: Arc<dyn Clock>,
    settings: SchedulerSettings,
) -> anyhow::Result<Worker> {
    wire_carriers(
        stores,
        redis,
        keys,
        (gateway_url, Carriers::default()),
        clock,
        settings,
    )
    .await
}

/// As [`wire`], with `carriers` configured: each card's calls go to its carrier's adapter,
/// through the batched dispatch, as `cmp-worker run` routes them.
pub(crate) async fn wire_carriers(
    stores: &store::Stores,
    redis: &Pool,
    keys: &Keys,
    (gateway_url, carriers): (String, Carriers),
    clock: Arc<dyn Clock>,
    settings: SchedulerSettings,
) -> anyhow::Result<Worker> {
    let core = Core::new(
        stores.clone(),
        redis.clone(),
        keys.clone(),
        QueueSettings::default(),
        clock.clone(),
    );
    core.configs.start().await.context("load polling configs")?;
    let Core { queue, configs, .. } = core.clone();
    let limiter = Arc::new(RedisRateLimiter::new(redis.clone(), keys.clone()));
    let http = Arc::new(
        HttpGateway::new(GatewayConfig::new(gateway_url), Some(limiter.clone()))
            .context("gateway client")?,
    );
    let ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, clock.clone()).with_limiter(limiter);
    let budget = http.clone();
    let router = Arc::new(
        CarrierRouter::new(http.clone(), ctx).with_released(move |polls| budget.released(polls)),
    );
    let refused = router.apply(carriers.accounts);
    anyhow::ensure!(refused.is_empty(), "carrier adapters refused: {refused:?}");
    let budget = Arc::new(GatewayBudget::new(http, router.clone()));
    let timed = Arc::new(TimedGateway {
        inner: Arc::new(BatchingGateway::new(router, carriers.linger)),
        timing: Default::default(),
    });
    let gateway: Arc<dyn gateway::CarrierGateway> = timed.clone();
    let stop_resume = core.stop_resume(
        gateway.clone(),
        StopResumeSettings {
            lock_ttl: Duration::from_secs(30),
            ..StopResumeSettings::default()
        },
    );
    let default_max = settings
        .pools
        .0
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX).saturating_mul(8));
    let deps = HandlerDeps {
        cards: stores.cards.clone(),
        devices: stores.devices.clone(),
        packages: stores.packages.clone(),
        gateway,
        stop_resume,
        configs: configs.clone(),
        queue: queue.clone(),
        semaphore: ConcurrencySemaphore::new(
            redis.clone(),
            keys.clone(),
            SemaphoreSettings {
                default_max,
                lease: Duration::from_secs(300),
            },
            clock.clone(),
        ),
        cache: CardCache::new(redis.clone(), keys.clone()),
        protect: core.protect_keys(),
        counters: TaskCounters::new(redis.clone(), keys.clone(), clock.clone()),
        lifecycle: core.lifecycle(),
        clock: clock.clone(),
        settings: HandlerSettings::default(),
    };
    let real = build_registry(&deps);
    let mut counting = Vec::with_capacity(4);
    for task in TaskType::ALL {
        let handler = real
            .get(task)
            .cloned()
            .with_context(|| format!("no {task} handler in the registry"))?;
        counting.push(Arc::new(Counting::new(handler)));
    }
    let counting: [Arc<Counting>; 4] = counting
        .try_into()
        .map_err(|_| anyhow::anyhow!("four task types"))?;
    let handlers: Vec<Arc<dyn TaskHandler>> = counting
        .iter()
        .map(|c| c.clone() as Arc<dyn TaskHandler>)
        .collect();
    let scheduler = Scheduler::new(
        queue.clone(),
        Registry::new(handlers),
        SingletonLease::new(redis.clone(), keys.clone()),
        clock,
        settings,
    )
    .with_budget(budget);
    Ok(Worker {
        queue,
        configs,
        counting,
        gateway: timed,
        scheduler,
    })
}
