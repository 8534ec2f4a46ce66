//! The composition root: every long-lived part of a worker node, built once from the settings.

use anyhow::Context;
use domain::{Clock, TaskType};
use gateway::{GatewayConfig, HttpGateway};
use lifecycle::{
    CardInitializer, InitSettings, PollingLifecycleService, QueueReconciler, ReconcileSettings,
};
use polling_config::PollingConfigManager;
use polling_queue::{
    CardCache, CardLock, ConcurrencySemaphore, Keys, PollingQueueManager, ProtectKeys,
    QueueSettings, RedisClock, RedisRateLimiter, SemaphoreSettings, SingletonLease, TaskCounters,
};
use settings::Settings;
use std::sync::Arc;
use stop_resume::{StopResumeService, StopResumeSettings};
use store::Stores;

pub(crate) struct Components {
    pub(crate) settings: Settings,
    pub(crate) db: sea_orm::DatabaseConnection,
    pub(crate) redis: fred::clients::Pool,
    /// The Redis server's time, read locally: every score this node writes is on the clock the
    /// scripts compare it with, whatever this node's wall clock says.
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) server_clock: Arc<RedisClock>,
    pub(crate) keys: Keys,
    pub(crate) stores: Stores,
    pub(crate) queue: PollingQueueManager,
    pub(crate) configs: PollingConfigManager,
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
        let keys = Keys::new(settings.redis_key_prefix.clone());
        let stores = Stores::new(db.clone());
        let queue = PollingQueueManager::new(
            redis.clone(),
            keys.clone(),
            QueueSettings {
                shard_count: settings.shard_count,
                lease: settings.lease,
            },
            clock.clone(),
        );
        let configs =
            PollingConfigManager::new(stores.configs.clone(), redis.clone(), keys.clone());
        let loaded = configs.start().await.context("load polling configs")?;
        tracing::info!(configs = loaded, "polling configs loaded");
        let leases = SingletonLease::new(redis.clone(), keys.clone());
        let initializer = CardInitializer::new(
            stores.cards.clone(),
            configs.clone(),
            redis.clone(),
            keys.clone(),
            clock.clone(),
            InitSettings {
                shard_count: settings.shard_count,
                ..InitSettings::default()
            },
        );
        Ok(Components {
            settings,
            db,
            redis,
            clock,
            server_clock,
            keys,
            stores,
            queue,
            configs,
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
        let limiter = RedisRateLimiter::new(self.redis.clone(), self.keys.clone());
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
        StopResumeService::new(
            self.stores.cards.clone(),
            self.stores.packages.clone(),
            gateway,
            ProtectKeys::new(self.redis.clone(), self.keys.clone()),
            CardLock::new(self.redis.clone(), self.keys.clone()),
            self.clock.clone(),
            StopResumeSettings::for_command_bound(command_bound),
        )
        .with_lifecycle(self.lifecycle())
    }

    pub(crate) fn lifecycle(&self) -> PollingLifecycleService {
        PollingLifecycleService::new(
            self.stores.cards.clone(),
            self.stores.devices.clone(),
            self.queue.clone(),
            self.configs.clone(),
            self.clock.clone(),
        )
    }

    pub(crate) fn reconciler(&self) -> QueueReconciler {
        QueueReconciler::new(
            self.stores.cards.clone(),
            self.queue.clone(),
            self.configs.clone(),
            self.leases.clone(),
            self.clock.clone(),
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
            self.redis.clone(),
            self.keys.clone(),
            SemaphoreSettings {
                default_max,
                lease: self.settings.lease,
            },
            self.clock.clone(),
        )
    }

    pub(crate) fn cache(&self) -> CardCache {
        CardCache::new(self.redis.clone(), self.keys.clone())
    }

    pub(crate) fn protect_keys(&self) -> ProtectKeys {
        ProtectKeys::new(self.redis.clone(), self.keys.clone())
    }

    pub(crate) fn counters(&self) -> TaskCounters {
        TaskCounters::new(self.redis.clone(), self.keys.clone(), self.clock.clone())
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
