//! The composition root: every long-lived part of a worker node, built once from the settings.

use anyhow::Context;
use domain::{Clock, TaskType};
use gateway::{GatewayConfig, HttpGateway};
use lifecycle::{CardInitializer, InitSettings, QueueReconciler, ReconcileSettings};
use polling_queue::{
    CardCache, ConcurrencySemaphore, RedisClock, RedisRateLimiter, SemaphoreSettings,
    SingletonLease, TaskCounters,
};
use settings::Settings;
use std::sync::Arc;
use stop_resume::{StopResumeService, StopResumeSettings};
use wiring::Core;

pub(crate) struct Components {
    pub(crate) settings: Settings,
    pub(crate) db: sea_orm::DatabaseConnection,
    /// Stores, Redis, keys, queues, configs, on the Redis server's clock.
    pub(crate) core: Core,
    /// The Redis server's time, read locally: every score this node writes is on the clock the
    /// scripts compare it with, whatever this node's wall clock says.
    pub(crate) server_clock: Arc<RedisClock>,
    pub(crate) leases: SingletonLease,
    pub(crate) initializer: CardInitializer,
}

impl Components {
    /// Connects and builds the parts every command needs.
    pub(crate) async fn connect(settings: Settings) -> anyhow::Result<Components> {
        let db = ops::connect_database(&settings).await?;
        let redis = ops::connect_redis(&settings).await?;
        let server_clock = Arc::new(RedisClock::start(redis.clone()).await);
        let clock: Arc<dyn Clock> = server_clock.clone();
        let core = Core::from_settings(&settings, db.clone(), redis.clone(), clock.clone());
        let loaded = core.configs.start().await.context("load polling configs")?;
        tracing::info!(configs = loaded, "polling configs loaded");
        let leases = SingletonLease::new(redis.clone(), core.keys.clone());
        let initializer = CardInitializer::new(
            core.stores.cards.clone(),
            core.configs.clone(),
            redis,
            core.keys.clone(),
            clock,
            InitSettings {
                shard_count: settings.shard_count,
                ..InitSettings::default()
            },
        );
        Ok(Components {
            settings,
            db,
            core,
            server_clock,
            leases,
            initializer,
        })
    }

    pub(crate) fn gateway(&self) -> anyhow::Result<HttpGateway> {
        let mut config = GatewayConfig::new(self.settings.gateway_url.clone());
        config.timeout = self.settings.gateway_timeout;
        config.rate_limit_per_sec = self.settings.gateway_rate_limit;
        config.rate_limits = self
            .settings
            .gateway_rate_limits
            .iter()
            .map(|(carrier, rate)| (domain::CarrierId(*carrier), *rate))
            .collect();
        let limiter = RedisRateLimiter::new(self.core.redis.clone(), self.core.keys.clone());
        HttpGateway::new(config, Some(Arc::new(limiter)))
            .context("build the gateway client (CMP_GATEWAY_URL)")
    }

    /// `command_bound`: the longest a stop or start can take with the client's settings
    /// (`GatewayConfig::command_bound`), which bounds how long an intent is in flight.
    pub(crate) fn stop_resume(
        &self,
        gateway: Arc<dyn gateway::CarrierGateway>,
        command_bound: std::time::Duration,
    ) -> StopResumeService {
        self.core.stop_resume(
            gateway,
            StopResumeSettings::for_command_bound(command_bound),
        )
    }

    pub(crate) fn reconciler(&self) -> QueueReconciler {
        QueueReconciler::new(
            self.core.stores.cards.clone(),
            self.core.queue.clone(),
            self.core.configs.clone(),
            self.leases.clone(),
            self.core.clock.clone(),
            ReconcileSettings::default(),
        )
    }

    pub(crate) fn semaphore(&self) -> ConcurrencySemaphore {
        // Room for `admin::concurrency::DEFAULT_NODES_PER_SEMAPHORE` nodes' pools while no
        // operator has set a max; the API derives the same default with the same function.
        let p = &self.settings.pools;
        let default_max =
            admin::concurrency::default_max([p.realname, p.carddata, p.package, p.protect]);
        ConcurrencySemaphore::new(
            self.core.redis.clone(),
            self.core.keys.clone(),
            SemaphoreSettings {
                default_max,
                lease: self.settings.lease,
            },
            self.core.clock.clone(),
        )
    }

    pub(crate) fn cache(&self) -> CardCache {
        CardCache::new(self.core.redis.clone(), self.core.keys.clone())
    }

    pub(crate) fn counters(&self) -> TaskCounters {
        TaskCounters::new(
            self.core.redis.clone(),
            self.core.keys.clone(),
            self.core.clock.clone(),
        )
    }

    pub(crate) fn pool_sizes(&self) -> scheduler::PoolSizes {
        let p = &self.settings.pools;
        let mut sizes = [0; 4];
        for t in TaskType::ALL {
            sizes[t.index()] = match t {
                TaskType::Realname => p.realname,
                TaskType::Carddata => p.carddata,
                TaskType::Package => p.package,
                TaskType::Protect => p.protect,
            };
        }
        scheduler::PoolSizes(sizes)
    }
}
