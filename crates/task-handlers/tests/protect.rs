//! The protect-period consistency check: every row of the seed's table.

mod common;

use common::{CardSpec, PROTECT_SECS, World, assert_score};
use domain::{CardId, DeviceId, GatewayOutcome, NetworkStatus, PackageOwner, StopReason, TaskType};
use polling_queue::ProtectState;
use rust_decimal_macros::dec;
use std::time::Duration;
use task_handlers::Outcome;
use tracing_test::traced_test;

const PERIOD: Duration = Duration::from_secs(3600);

async fn bound(w: &World, spec: CardSpec) -> (CardId, DeviceId) {
    let device = w.device(&format!("D-{}", spec.id)).await;
    let card = w.card(spec.on(device)).await;
    (card, device)
}

/// Seed: stop period, card online -> direct gateway stop; `network_status = 0`,
/// `stop_reason = protect`; info log.
#[tokio::test]
#[traced_test]
async fn stop_period_and_online_forces_a_stop() {
    let w = World::new().await;
    let (card, device) = bound(&w, CardSpec::new(100)).await;
    w.add_package(w.package(PackageOwner::Device(device), None, dec!(0)))
        .await;
    w.protect.set_stop(device, PERIOD).await.expect("period");

    assert_eq!(w.handle(TaskType::Protect, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::Protect))
    );
    assert_eq!(w.calls(card), (1, 0));
    let log = w.log(card).await;
    assert_eq!(log.len(), 1);
    assert_eq!(
        (log[0].entry.trigger.as_str(), log[0].entry.gateway_outcome),
        ("protect", GatewayOutcome::Ok)
    );
    let device_field = format!("device_id={device}");
    logs_assert(common::line_with(&[
        "保护期强制停机",
        "card_id=100",
        &device_field,
    ]));
    assert_score(
        w.score(card, TaskType::Protect).await,
        w.at(PROTECT_SECS),
        "interval",
    );
}

/// Seed: start period, card stopped -> direct gateway start; `network_status = 1`,
/// `stop_reason = ''`; info log. (No package: the decision table would keep it stopped, which
/// shows the correction bypasses it.)
#[tokio::test]
#[traced_test]
async fn start_period_and_stopped_forces_a_start() {
    let w = World::new().await;
    let (card, device) = bound(&w, CardSpec::new(101).stopped(StopReason::NoPackage)).await;
    w.protect.set_start(device, PERIOD).await.expect("period");

    assert_eq!(w.handle(TaskType::Protect, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(w.calls(card), (0, 1));
    let device_field = format!("device_id={device}");
    logs_assert(common::line_with(&[
        "保护期强制复机",
        "card_id=101",
        &device_field,
    ]));
}

/// Seed: stop period, card already stopped -> consistent: no gateway, no evaluation, requeued.
#[tokio::test]
async fn consistent_with_the_period_does_nothing() {
    let w = World::new().await;
    let (card, device) = bound(&w, CardSpec::new(102).stopped(StopReason::Protect)).await;
    w.protect.set_stop(device, PERIOD).await.expect("period");
    let (online, online_device) = bound(&w, CardSpec::new(103)).await;
    w.protect
        .set_start(online_device, PERIOD)
        .await
        .expect("period");

    assert_eq!(w.handle(TaskType::Protect, card).await, Outcome::Success);
    assert_eq!(w.handle(TaskType::Protect, online).await, Outcome::Success);

    assert_eq!((w.calls(card), w.calls(online)), ((0, 0), (0, 0)));
    assert!(w.log(card).await.is_empty() && w.log(online).await.is_empty());
    assert_score(
        w.score(card, TaskType::Protect).await,
        w.at(PROTECT_SECS),
        "interval",
    );
}

/// Seed: the period is over (key expired), card stopped for protect -> `evaluate_and_act`:
/// resumed with a valid package; with none, kept stopped with the real reason.
#[tokio::test]
async fn period_over_evaluates() {
    let w = World::new().await;
    let (card, device) = bound(&w, CardSpec::new(104).stopped(StopReason::Protect)).await;
    w.add_package(w.package(PackageOwner::Device(device), None, dec!(0)))
        .await;
    let (bare, bare_device) = bound(&w, CardSpec::new(105).stopped(StopReason::Protect)).await;
    // The periods existed and have run out (TTL reached 0).
    w.protect
        .set_stop(device, Duration::from_millis(50))
        .await
        .expect("period");
    w.protect
        .set_stop(bare_device, Duration::from_millis(50))
        .await
        .expect("period");
    // Wait for both periods to run out.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    for d in [device, bare_device] {
        while w.protect.protect_state(d).await.expect("state") != ProtectState::default() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the period never ended"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    assert_eq!(w.handle(TaskType::Protect, card).await, Outcome::Success);
    assert_eq!(w.handle(TaskType::Protect, bare).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(w.calls(card), (0, 1));
    let b = w.db_card(bare).await;
    assert_eq!(
        (b.facts.network_status, b.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::NoPackage))
    );
    assert_eq!(
        w.calls(bare),
        (0, 0),
        "reason updated without a gateway call"
    );
    assert_eq!(w.log(bare).await[0].entry.trigger, "protect");
}

/// Seed: a card not real-named is skipped: requeued, no period check, no gateway.
#[tokio::test]
async fn not_real_named_is_skipped() {
    let w = World::new().await;
    let (card, device) = bound(&w, CardSpec::new(106).not_real_named()).await;
    w.protect.set_stop(device, PERIOD).await.expect("period");

    assert_eq!(w.handle(TaskType::Protect, card).await, Outcome::Skipped);

    assert_eq!(
        w.db_card(card).await.facts.network_status,
        NetworkStatus::Online
    );
    assert_eq!(w.calls(card), (0, 0));
    assert_score(
        w.score(card, TaskType::Protect).await,
        w.at(PROTECT_SECS),
        "interval",
    );
}

/// Seed: a standalone card is skipped: requeued, no gateway, no evaluation (which would stop
/// this card for `no_package`).
#[tokio::test]
async fn standalone_is_skipped() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(107)).await;

    assert_eq!(w.handle(TaskType::Protect, card).await, Outcome::Skipped);

    assert_eq!(
        w.db_card(card).await.facts.network_status,
        NetworkStatus::Online
    );
    assert_eq!(w.calls(card), (0, 0));
    assert_score(
        w.score(card, TaskType::Protect).await,
        w.at(PROTECT_SECS),
        "interval",
    );
}

/// Invariant 5: an operator's stop is not undone by a start period.
#[tokio::test]
async fn start_period_leaves_a_manual_stop() {
    let w = World::new().await;
    let (card, device) = bound(&w, CardSpec::new(108).stopped(StopReason::Manual)).await;
    w.protect.set_start(device, PERIOD).await.expect("period");

    assert_eq!(w.handle(TaskType::Protect, card).await, Outcome::Success);

    assert_eq!(w.db_card(card).await.stop_reason, Some(StopReason::Manual));
    assert_eq!(w.calls(card), (0, 0));
}
