//! The composition root of an API replica: the admin services over the stores, Redis and
//! the carrier gateway, built once from the settings.

use crate::auth::Authenticator;
use crate::state::AppState;
use admin::{Admin, AdminParts, AdminStores};
use anyhow::Context;
use domain::{Clock, SystemClock};
use gateway::carriers::{AdapterContext, CarrierRouter};
use gateway::{GatewayConfig, HttpGateway};
use lifecycle::PollingLifecycleService;
use polling_config::PollingConfigManager;
use polling_queue::{
    CardLock, Keys, PollingQueueManager, ProtectKeys, QueueInspector, QueueSettings,
    RedisRateLimiter,
};
use settings::Settings;
use std::sync::Arc;
use stop_resume::{StopResumeService, StopResumeSettings};
use store::Stores;

/// Builds the state from connections (the binary and the tests share it).
pub(crate) fn state(
    settings: &Settings,
    db: sea_orm::DatabaseConnection,
    redis: fred::clients::Pool,
    configs: Option<PollingConfigManager>,
) -> anyhow::Result<(AppState, PollingConfigManager)> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let keys = Keys::new(settings.redis_key_prefix.clone());
    let stores = Stores::new(db);
    let queue = PollingQueueManager::new(
        redis.clone(),
        keys.clone(),
        QueueSettings {
            shard_count: settings.shard_count,
            lease: settings.lease,
        },
        clock.clone(),
    );
    let configs = configs.unwrap_or_else(|| {
        PollingConfigManager::new(stores.configs.clone(), redis.clone(), keys.clone())
    });
    let mut gateway_config = GatewayConfig::new(settings.gateway_url.clone());
    gateway_config.timeout = settings.gateway_timeout;
    gateway_config.rate_limit_per_sec = settings.gateway_rate_limit;
    let limiter = Arc::new(RedisRateLimiter::new(redis.clone(), keys.clone()));
    let mut adapters =
        AdapterContext::new(settings.timezone, clock.clone()).with_limiter(limiter.clone());
    adapters.max_rate_wait = gateway_config.max_rate_wait;
    adapters.retry = gateway_config.retry.clone();
    // The carriers are read after start (`CarrierRouter::refresh`): an operator's stop through
    // a carrier whose timeout is longer than CMP_GATEWAY_TIMEOUT_MS is cut off at this bound
    // (its intent closes `interrupted` and the next evaluation asks again).
    let command_bound = gateway_config.command_bound();
    let default: Arc<dyn gateway::CarrierGateway> = Arc::new(
        HttpGateway::new(gateway_config, Some(limiter))
            .context("build the gateway client (CMP_GATEWAY_URL)")?,
    );
    let carriers = Arc::new(CarrierRouter::new(default, adapters));
    let gateway: Arc<dyn gateway::CarrierGateway> = carriers.clone();
    let ops = crate::ops_state::build(crate::ops_state::OpsParts {
        settings,
        stores: &stores,
        redis: redis.clone(),
        keys: keys.clone(),
        queue: queue.clone(),
        configs: configs.clone(),
        clock: clock.clone(),
    });
    let lifecycle = PollingLifecycleService::new(
        stores.cards.clone(),
        stores.devices.clone(),
        queue.clone(),
        configs.clone(),
        clock.clone(),
    );
    let stop_resume = StopResumeService::new(
        stores.cards.clone(),
        stores.packages.clone(),
        gateway,
        ProtectKeys::new(redis.clone(), keys.clone()),
        CardLock::new(redis.clone(), keys.clone()),
        clock.clone(),
        StopResumeSettings::for_command_bound(command_bound),
    )
    .with_lifecycle(lifecycle.clone());
    let admin = Admin::new(AdminParts {
        stores: AdminStores {
            cards: stores.cards.clone(),
            card_admin: stores.card_admin.clone(),
            devices: stores.devices.clone(),
            packages: stores.packages.clone(),
            configs: stores.configs.clone(),
            manual_triggers: stores.manual_triggers.clone(),
            audit: stores.admin_audit.clone(),
            usage_history: stores.usage_history.clone(),
        },
        inspector: QueueInspector::new(redis.clone(), keys.clone(), settings.shard_count),
        queue,
        configs: configs.clone(),
        lifecycle,
        stop_resume,
        protect: ProtectKeys::new(redis, keys),
        clock,
        protect_period: settings.protect_period,
        timezone: settings.timezone,
    });
    Ok((
        AppState {
            admin,
            auth: Authenticator::new(stores.api_keys.clone()),
            audit: stores.admin_audit.clone(),
            ops,
            carriers,
        },
        configs,
    ))
}
