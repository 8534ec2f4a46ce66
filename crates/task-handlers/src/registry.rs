//! The one place that builds the four handlers from their dependencies.

use crate::identities::IdentityLoader;
use crate::snapshots::SnapshotLoader;
use crate::{
    PollingBase, PollingCarddataHandler, PollingDeps, PollingPackageHandler, PollingProtectHandler,
    PollingRealnameHandler, Registry, TaskHandler,
};
use chrono_tz::Tz;
use domain::Clock;
use domain::store::{CardStore, DeviceStore, PackageStore};
use gateway::CarrierGateway;
use lifecycle::PollingLifecycleService;
use polling_config::PollingConfigManager;
use polling_queue::{
    CardCache, ConcurrencySemaphore, PollingQueueManager, ProtectKeys, TaskCounters,
};
use std::sync::Arc;
use std::time::Duration;
use stop_resume::StopResumeService;

/// Settings of the handlers and the package jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerSettings {
    /// `CMP_RETRY_INTERVAL_SECS`: when a failed poll (gateway, store, Redis, evaluation) comes
    /// back, and where a card no matched config schedules is parked.
    pub retry_interval: Duration,
    /// `CMP_TIMEZONE`: the carrier's calendar. The usage poll follows the month the carrier
    /// reports and only logs when it differs from the local month (clock skew at midnight).
    pub timezone: Tz,
    /// Evaluations the package jobs run at once: enough to overlap gateway latency, few enough
    /// to leave the handlers their database connections and carrier budget.
    pub job_concurrency: usize,
}

impl Default for HandlerSettings {
    fn default() -> Self {
        Self {
            retry_interval: Duration::from_secs(60),
            timezone: chrono_tz::Asia::Shanghai,
            job_concurrency: 16,
        }
    }
}

/// Everything the handlers and the package jobs need, built once by the worker binary.
#[derive(Clone)]
pub struct HandlerDeps {
    pub cards: Arc<dyn CardStore>,
    pub devices: Arc<dyn DeviceStore>,
    pub packages: Arc<dyn PackageStore>,
    pub gateway: Arc<dyn CarrierGateway>,
    pub stop_resume: StopResumeService,
    /// Cheap to clone; clones share one config cache.
    pub configs: PollingConfigManager,
    pub queue: PollingQueueManager,
    pub semaphore: ConcurrencySemaphore,
    pub cache: CardCache,
    pub protect: ProtectKeys,
    pub counters: TaskCounters,
    /// Keeps queue membership equal to the matched config when a poll changes a fact.
    pub lifecycle: PollingLifecycleService,
    pub clock: Arc<dyn Clock>,
    pub settings: HandlerSettings,
}

impl std::fmt::Debug for HandlerDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerDeps")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl HandlerDeps {
    /// The shared base every handler is built on.
    pub fn base(&self) -> PollingBase {
        PollingBase {
            configs: self.configs.clone(),
            queue: self.queue.clone(),
            semaphore: self.semaphore.clone(),
            cache: self.cache.clone(),
            identities: IdentityLoader::new(self.cache.clone(), self.cards.clone()),
            snapshots: SnapshotLoader::new(
                self.cards.clone(),
                self.cache.clone(),
                self.protect.clone(),
            ),
            counters: self.counters.clone(),
            lifecycle: self.lifecycle.clone(),
            clock: self.clock.clone(),
            settings: self.settings.clone(),
        }
    }

    /// What every poll handler holds: the base and the services the polls share.
    pub fn polling(&self) -> PollingDeps {
        PollingDeps {
            base: self.base(),
            gateway: self.gateway.clone(),
            cards: self.cards.clone(),
            packages: self.packages.clone(),
            stop_resume: self.stop_resume.clone(),
        }
    }
}

/// The four handlers, one per task type.
pub fn build_registry(deps: &HandlerDeps) -> Registry {
    let polling = deps.polling();
    let handlers: [Arc<dyn TaskHandler>; 4] = [
        Arc::new(PollingRealnameHandler::new(polling.clone())),
        Arc::new(PollingCarddataHandler::new(polling.clone())),
        Arc::new(PollingPackageHandler::new(polling.clone())),
        Arc::new(PollingProtectHandler::new(polling)),
    ];
    Registry::new(handlers)
}
