//! The carriers of a worker node: every card's calls go to its carrier's adapter
//! ([`CarrierRouter`]), the configuration follows `tb_carrier` without a restart, and each
//! carrier's health is published to Redis (the API's carrier page) and shown on `/readyz`, and
//! its calls are added to the cluster's per-minute counts (the carrier's budget used).

use crate::components::Components;
use domain::CarrierHealthState;
use gateway::HttpGateway;
use gateway::carriers::{AdapterContext, CarrierRouter};
use polling_queue::{CarrierHealthBoard, RedisRateLimiter};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How often the node looks for a changed carrier configuration and publishes health.
pub(crate) const FOLLOW_EVERY: Duration = Duration::from_secs(5);

/// The router over the carriers configured now; carriers without a row use `default`.
pub(crate) async fn router(c: &Components, default: Arc<HttpGateway>) -> Arc<CarrierRouter> {
    let limiter = RedisRateLimiter::new(c.core.redis.clone(), c.core.keys.clone());
    let mut ctx = AdapterContext::new(c.settings.timezone, c.core.clock.clone())
        .with_limiter(Arc::new(limiter));
    ctx.max_rate_wait = default.config().max_rate_wait;
    ctx.retry = default.config().retry.clone();
    let budget = default.clone();
    let router = Arc::new(
        CarrierRouter::new(default, ctx).with_released(move |polls| budget.released(polls)),
    );
    if let Err(e) = router.refresh(c.core.stores.carriers.as_ref()).await {
        // The follower retries every few seconds; until then every card uses the default.
        warn!(error = %e, "cannot read the carriers at start");
    }
    router
}

/// Follows `tb_carrier`, publishes each carrier's health and adds its calls to the cluster's
/// counts every [`FOLLOW_EVERY`].
pub(crate) fn spawn(
    c: &Components,
    router: Arc<CarrierRouter>,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    let follower = tokio::spawn(router.clone().follow(
        c.core.stores.carriers.clone(),
        FOLLOW_EVERY,
        shutdown.clone(),
    ));
    let board = CarrierHealthBoard::new(c.core.redis.clone(), c.core.keys.clone());
    let mut calls = admin::budget::CallReporter::new(polling_queue::CarrierCalls::new(
        c.core.redis.clone(),
        c.core.keys.clone(),
    ));
    let clock = c.core.clock.clone();
    tokio::spawn(async move {
        loop {
            let now = clock.now();
            let all = router.health(now);
            for health in &all {
                if let Err(e) = board.publish(health).await {
                    warn!(error = %e, "cannot publish carrier health");
                    break;
                }
            }
            calls.report(&all, now).await;
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(FOLLOW_EVERY) => {}
            }
        }
        follower.abort();
    })
}

/// `/readyz`'s `detail.carriers`: each configured carrier's state, with the last error of those
/// not answering (credentials refused, timeouts). Never makes the node unready: it still polls
/// every other carrier.
pub(crate) fn readiness_detail(router: Arc<CarrierRouter>) -> impl Fn() -> serde_json::Value {
    move || {
        let health = router.health(chrono::Utc::now());
        let map: serde_json::Map<String, serde_json::Value> = health
            .into_iter()
            .map(|h| {
                let mut v = serde_json::json!({ "state": h.state.as_str() });
                if matches!(
                    h.state,
                    CarrierHealthState::AuthFailed | CarrierHealthState::Failing
                ) {
                    v["last_error"] = serde_json::json!(h.last_error);
                    v["last_error_at"] = serde_json::json!(h.last_error_at);
                }
                (h.carrier_id.to_string(), v)
            })
            .collect();
        serde_json::Value::Object(map)
    }
}
