//! The composition root of an API replica: the admin services over the stores, Redis and
//! the carrier gateway, built once from the settings.

use crate::auth::Authenticator;
use crate::state::AppState;
use admin::carriers::stream::{StreamParts, StreamService};
use admin::{Admin, AdminParts, AdminStores};
use anyhow::Context;
use domain::{Clock, SystemClock};
use gateway::carriers::{AdapterContext, CarrierRouter};
use gateway::{GatewayConfig, HttpGateway};
use polling_config::PollingConfigManager;
use polling_queue::{QueueInspector, RedisRateLimiter};
use settings::Settings;
use std::sync::Arc;
use stop_resume::StopResumeSettings;
use wiring::Core;

/// Builds the state from connections (the binary and the tests share it).
pub(crate) fn state(
    settings: &Settings,
    db: sea_orm::DatabaseConnection,
    redis: fred::clients::Pool,
    configs: Option<PollingConfigManager>,
) -> anyhow::Result<(AppState, PollingConfigManager)> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let core = Core::from_settings(settings, db, redis, clock);
    let core = match configs {
        Some(shared) => core.with_configs(shared),
        None => core,
    };
    let mut gateway_config = GatewayConfig::new(settings.gateway_url.clone());
    gateway_config.timeout = settings.gateway_timeout;
    gateway_config.rate_limit_per_sec = settings.gateway_rate_limit;
    let limiter = Arc::new(RedisRateLimiter::new(core.redis.clone(), core.keys.clone()));
    let mut adapters =
        AdapterContext::new(settings.timezone, core.clock.clone()).with_limiter(limiter.clone());
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
    let ops = crate::ops_state::build(settings, &core);
    let lifecycle = core.lifecycle();
    let stop_resume = core.stop_resume(
        gateway,
        StopResumeSettings::for_command_bound(command_bound),
    );
    let streams = StreamService::new(StreamParts {
        carriers: core.stores.carriers.clone(),
        streams: core.stores.streams.clone(),
        queue: core.queue.clone(),
        configs: core.configs.clone(),
        stop_resume: stop_resume.clone(),
        clock: core.clock.clone(),
        timezone: settings.timezone,
    });
    let admin = Admin::new(AdminParts {
        stores: AdminStores {
            cards: core.stores.cards.clone(),
            card_admin: core.stores.card_admin.clone(),
            devices: core.stores.devices.clone(),
            packages: core.stores.packages.clone(),
            configs: core.stores.configs.clone(),
            manual_triggers: core.stores.manual_triggers.clone(),
            audit: core.stores.admin_audit.clone(),
            usage_history: core.stores.usage_history.clone(),
        },
        inspector: QueueInspector::new(core.redis.clone(), core.keys.clone(), settings.shard_count),
        queue: core.queue.clone(),
        configs: core.configs.clone(),
        lifecycle,
        stop_resume,
        protect: core.protect_keys(),
        clock: core.clock.clone(),
        protect_period: settings.protect_period,
        timezone: settings.timezone,
    });
    Ok((
        AppState {
            admin,
            auth: Authenticator::new(core.stores.api_keys.clone()),
            sessions: crate::session::Sessions::new(core.redis.clone(), core.keys.clone()),
            imports: crate::imports::ImportJobs::new(core.redis.clone(), core.keys.clone()),
            audit: core.stores.admin_audit.clone(),
            ops,
            carriers,
            streams,
        },
        core.configs,
    ))
}
