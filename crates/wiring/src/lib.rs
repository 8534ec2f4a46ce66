//! What every process builds alike over its two connections: the stores, the sharded queues,
//! the polling configs, queue membership ([`PollingLifecycleService`]) and stop/start
//! ([`StopResumeService`]). `cmp-api`, `cmp-worker` and `just bench` each start from one
//! [`Core`], so the benchmark measures the wiring the binaries run and a new part is wired once.

use domain::Clock;
use fred::clients::Pool;
use gateway::CarrierGateway;
use lifecycle::PollingLifecycleService;
use polling_config::PollingConfigManager;
use polling_queue::{CardLock, Keys, PollingQueueManager, ProtectKeys, QueueSettings};
use sea_orm::DatabaseConnection;
use settings::Settings;
use std::sync::Arc;
use stop_resume::{StopResumeService, StopResumeSettings};
use store::Stores;

/// The parts a process shares between its services. Cheap to clone: clones share the
/// connections and the config cache.
#[derive(Clone)]
pub struct Core {
    pub stores: Stores,
    pub redis: Pool,
    /// Every `polling:*` key under the process's prefix.
    pub keys: Keys,
    /// The clock queue scores are written on.
    pub clock: Arc<dyn Clock>,
    pub queue: PollingQueueManager,
    /// Not started here: the worker loads the configs before it polls
    /// ([`PollingConfigManager::start`]).
    pub configs: PollingConfigManager,
}

impl Core {
    /// Over `stores` and `redis`, keys under `keys`, queues sharded and leased as `queue` says.
    pub fn new(
        stores: Stores,
        redis: Pool,
        keys: Keys,
        queue: QueueSettings,
        clock: Arc<dyn Clock>,
    ) -> Core {
        let configs =
            PollingConfigManager::new(stores.configs.clone(), redis.clone(), keys.clone());
        let queue = PollingQueueManager::new(redis.clone(), keys.clone(), queue, clock.clone());
        Core {
            stores,
            redis,
            keys,
            clock,
            queue,
            configs,
        }
    }

    /// As the settings say: `CMP_REDIS_KEY_PREFIX`, `CMP_SHARD_COUNT`, `CMP_LEASE_SECS`.
    pub fn from_settings(
        settings: &Settings,
        db: DatabaseConnection,
        redis: Pool,
        clock: Arc<dyn Clock>,
    ) -> Core {
        let queue = QueueSettings {
            shard_count: settings.shard_count,
            lease: settings.lease,
        };
        let keys = Keys::new(settings.redis_key_prefix.clone());
        Core::new(Stores::new(db), redis, keys, queue, clock)
    }

    /// With `configs` in place of its own, for a caller that shares one config cache.
    pub fn with_configs(mut self, configs: PollingConfigManager) -> Core {
        self.configs = configs;
        self
    }

    /// Queue membership that follows the facts config matching reads.
    pub fn lifecycle(&self) -> PollingLifecycleService {
        PollingLifecycleService::new(
            self.stores.cards.clone(),
            self.stores.devices.clone(),
            self.queue.clone(),
            self.configs.clone(),
            self.clock.clone(),
        )
    }

    pub fn protect_keys(&self) -> ProtectKeys {
        ProtectKeys::new(self.redis.clone(), self.keys.clone())
    }

    /// Every stop and start, through `gateway`, aligning the card's queues once after a change.
    pub fn stop_resume(
        &self,
        gateway: Arc<dyn CarrierGateway>,
        settings: StopResumeSettings,
    ) -> StopResumeService {
        StopResumeService::new(
            self.stores.cards.clone(),
            self.stores.packages.clone(),
            gateway,
            self.protect_keys(),
            CardLock::new(self.redis.clone(), self.keys.clone()),
            self.clock.clone(),
            settings,
        )
        .with_lifecycle(self.lifecycle())
    }
}
