//! [`Admin`]: every dependency of the admin services, built once by the binary.

use domain::Clock;
use domain::store::{
    AdminAuditStore, CardAdminStore, CardStore, DeviceStore, ManualTriggerLogStore, PackageStore,
    PollingConfigStore, UsageHistoryStore,
};
use lifecycle::PollingLifecycleService;
use polling_config::PollingConfigManager;
use polling_queue::{PollingQueueManager, ProtectKeys, QueueInspector};
use std::sync::Arc;
use std::time::Duration;
use stop_resume::StopResumeService;

/// The stores the admin services read and write.
#[derive(Clone)]
pub struct AdminStores {
    pub cards: Arc<dyn CardStore>,
    pub card_admin: Arc<dyn CardAdminStore>,
    pub devices: Arc<dyn DeviceStore>,
    pub packages: Arc<dyn PackageStore>,
    pub configs: Arc<dyn PollingConfigStore>,
    pub manual_triggers: Arc<dyn ManualTriggerLogStore>,
    pub audit: Arc<dyn AdminAuditStore>,
    pub usage_history: Arc<dyn UsageHistoryStore>,
}

/// The services behind the admin API. Cheap to clone; one per process.
#[derive(Clone)]
pub struct Admin {
    pub(crate) stores: AdminStores,
    pub(crate) queue: PollingQueueManager,
    pub(crate) inspector: QueueInspector,
    pub(crate) configs: PollingConfigManager,
    pub(crate) lifecycle: PollingLifecycleService,
    pub(crate) stop_resume: StopResumeService,
    pub(crate) protect: ProtectKeys,
    pub(crate) clock: Arc<dyn Clock>,
    /// `CMP_PROTECT_PERIOD_SECS`: how long a device stop or start is protected.
    pub(crate) protect_period: Duration,
    /// `CMP_TIMEZONE`: the calendar of a month asked for by the API.
    pub(crate) timezone: chrono_tz::Tz,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").finish_non_exhaustive()
    }
}

/// The parts [`Admin::new`] is built from.
pub struct AdminParts {
    pub stores: AdminStores,
    pub queue: PollingQueueManager,
    pub inspector: QueueInspector,
    pub configs: PollingConfigManager,
    pub lifecycle: PollingLifecycleService,
    pub stop_resume: StopResumeService,
    pub protect: ProtectKeys,
    pub clock: Arc<dyn Clock>,
    pub protect_period: Duration,
    pub timezone: chrono_tz::Tz,
}

impl Admin {
    pub fn new(p: AdminParts) -> Self {
        Admin {
            stores: p.stores,
            queue: p.queue,
            inspector: p.inspector,
            configs: p.configs,
            lifecycle: p.lifecycle,
            stop_resume: p.stop_resume,
            protect: p.protect,
            clock: p.clock,
            protect_period: p.protect_period,
            timezone: p.timezone,
        }
    }

    /// `CMP_TIMEZONE`, the deployment's calendar (the dashboard formats dates in it).
    pub fn timezone(&self) -> chrono_tz::Tz {
        self.timezone
    }

    /// The audit store, for the API's audit layer.
    pub fn audit_store(&self) -> Arc<dyn AdminAuditStore> {
        self.stores.audit.clone()
    }
}
