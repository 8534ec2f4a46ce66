//! The services of the admin API's part 2 (`docs/admin-ops.md`): monitoring, concurrency, alert
//! rules, data cleanup, the metrics history and the carriers, built once from the settings next to
//! [`admin::Admin`].

use admin::alert_metrics::MetricReader;
use admin::alerts::AlertService;
use admin::budget::{BudgetService, BudgetStores};
use admin::carriers::CarrierService;
use admin::cleanup::CleanupService;
use admin::concurrency::{ConcurrencyService, default_max};
use admin::history::HistoryService;
use admin::monitoring::MonitoringService;
use lifecycle::{CardInitializer, InitSettings};
use polling_queue::{
    CarrierHealthBoard, ConcurrencySemaphore, RecentCounters, SemaphoreSettings, SingletonLease,
    TaskCounters,
};
use settings::Settings;
use wiring::Core;

/// Monitoring, concurrency, alerts, cleanup, history. Cheap to clone.
#[derive(Clone)]
pub(crate) struct OpsServices {
    pub(crate) monitoring: MonitoringService,
    pub(crate) concurrency: ConcurrencyService,
    pub(crate) alerts: AlertService,
    pub(crate) cleanup: CleanupService,
    pub(crate) history: HistoryService,
    /// Carriers as configuration, their health board and connection test.
    pub(crate) carriers: CarrierService,
    /// The carriers' budget figures the worker's `carrier_budget` job publishes.
    pub(crate) budget: BudgetService,
}

/// The operations services over the process's shared parts.
pub(crate) fn build(settings: &Settings, p: &Core) -> OpsServices {
    let pools = &settings.pools;
    // The worker's default, from the same settings and the same function.
    let defaults = default_max([pools.realname, pools.carddata, pools.package, pools.protect]);
    let semaphore = ConcurrencySemaphore::new(
        p.redis.clone(),
        p.keys.clone(),
        SemaphoreSettings {
            default_max: defaults,
            lease: settings.lease,
        },
        p.clock.clone(),
    );
    let recent = RecentCounters::new(p.redis.clone(), p.keys.clone());
    let initializer = CardInitializer::new(
        p.stores.cards.clone(),
        p.configs.clone(),
        p.redis.clone(),
        p.keys.clone(),
        p.clock.clone(),
        InitSettings {
            shard_count: settings.shard_count,
            ..InitSettings::default()
        },
    );
    OpsServices {
        monitoring: MonitoringService::new(
            MetricReader::new(
                p.stores.monitoring.clone(),
                p.queue.clone(),
                recent.clone(),
                initializer,
                recent.budget_board(),
                p.clock.clone(),
            ),
            TaskCounters::new(p.redis.clone(), p.keys.clone(), p.clock.clone()),
        ),
        concurrency: ConcurrencyService::new(semaphore, defaults),
        alerts: AlertService::new(p.stores.alerts.clone()),
        carriers: CarrierService::new(
            p.stores.carriers.clone(),
            CarrierHealthBoard::new(p.redis.clone(), p.keys.clone()),
            settings.timezone,
            p.clock.clone(),
        ),
        budget: BudgetService::new(
            BudgetStores {
                carriers: p.stores.carriers.clone(),
                cards: p.stores.card_admin.clone(),
                configs: p.stores.configs.clone(),
            },
            recent.carrier_calls(),
            recent.budget_board(),
            p.clock.clone(),
        ),
        cleanup: CleanupService::new(
            p.stores.cleanup.clone(),
            SingletonLease::new(p.redis.clone(), p.keys.clone()),
            p.clock.clone(),
        ),
        history: HistoryService::new(
            p.stores.metrics_history.clone(),
            p.stores.monitoring.clone(),
            p.queue.clone(),
            recent,
            p.clock.clone(),
        ),
    }
}
