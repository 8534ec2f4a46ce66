//! The package poll: carrier packages written by external id into the covering owner, then
//! `evaluate_and_act`.

mod common;

use chrono::Duration;
use common::{CardSpec, PACKAGE_SECS, RETRY_SECS, World, assert_score};
use domain::{CarrierPackage, NetworkStatus, PackageOwner, PackageStatus, StopReason, TaskType};
use gateway::CallKind;
use gateway_sim::{Script, ScriptStep};
use rust_decimal_macros::dec;
use task_handlers::Outcome;

fn renewed(w: &World, external_id: &str) -> CarrierPackage {
    CarrierPackage {
        external_id: external_id.into(),
        status: PackageStatus::Active,
        used_mb: dec!(0),
        limit_mb: Some(dec!(1024)),
        activated_at: Some(w.now() - Duration::hours(1)),
        expires_at: Some(w.now() + Duration::days(30)),
    }
}

/// Seed: stopped for traffic_exhausted, the old package expired (status 3), the carrier reports
/// a new active package -> written, `evaluate_and_act` resumes the card.
#[tokio::test]
async fn renewal_resumes_a_traffic_exhausted_card() {
    let w = World::new().await;
    let card = w
        .card(CardSpec::new(100).stopped(StopReason::TrafficExhausted))
        .await;
    let mut old = w.package(PackageOwner::Card(card), Some(dec!(100)), dec!(100));
    old.external_id = Some("P-OLD".into());
    old.status = PackageStatus::Expired;
    old.expires_at = Some(w.now() - Duration::hours(2));
    w.add_package(old).await;
    let mut old_view = renewed(&w, "P-OLD");
    old_view.status = PackageStatus::Expired;
    old_view.used_mb = dec!(100);
    w.set_carrier_packages(card, vec![old_view, renewed(&w, "P-NEW")]);

    assert_eq!(w.handle(TaskType::Package, card).await, Outcome::Success);

    let pkgs = w.packages_of(PackageOwner::Card(card)).await;
    assert_eq!(
        pkgs.len(),
        2,
        "matched by external_id: the old row updated, the new one inserted"
    );
    let new = pkgs
        .iter()
        .find(|p| p.spec.external_id.as_deref() == Some("P-NEW"))
        .expect("new package");
    assert_eq!(
        (new.spec.status, new.spec.data_limit_mb),
        (PackageStatus::Active, Some(dec!(1024)))
    );
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(w.calls(card), (0, 1));
    assert_eq!(w.log(card).await[0].entry.trigger, "package");
    assert_score(
        w.score(card, TaskType::Package).await,
        w.at(PACKAGE_SECS),
        "interval",
    );
}

/// A card bound to a device: the carrier's packages belong to the device (`docs/rules.md`,
/// "Stop / resume", packages that count).
#[tokio::test]
async fn bound_card_writes_into_the_device() {
    let w = World::new().await;
    let device = w.device("D-PKG").await;
    let card = w.card(CardSpec::new(101).on(device)).await;
    w.set_carrier_packages(card, vec![renewed(&w, "P-DEV")]);

    assert_eq!(w.handle(TaskType::Package, card).await, Outcome::Success);

    let of_device = w.packages_of(PackageOwner::Device(device)).await;
    assert_eq!(of_device.len(), 1);
    assert_eq!(of_device[0].spec.external_id.as_deref(), Some("P-DEV"));
    assert!(w.packages_of(PackageOwner::Card(card)).await.is_empty());
    assert_eq!(
        w.calls(card),
        (0, 0),
        "covered by the device's package: stays online"
    );

    // Polled again with the same view: nothing new, still one row.
    assert_eq!(w.handle(TaskType::Package, card).await, Outcome::Success);
    assert_eq!(w.packages_of(PackageOwner::Device(device)).await.len(), 1);
}

/// A package query failure writes nothing and comes back at the retry interval.
#[tokio::test]
async fn query_failure_retries() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(102)).await;
    w.set_carrier_packages(card, vec![renewed(&w, "P-X")]);
    w.sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Status(503)],
        call: Some(CallKind::Packages),
    });

    assert_eq!(w.handle(TaskType::Package, card).await, Outcome::Failure);
    assert!(w.packages_of(PackageOwner::Card(card)).await.is_empty());
    assert_eq!(w.calls(card), (0, 0), "no evaluation");
    assert_score(
        w.score(card, TaskType::Package).await,
        w.at(RETRY_SECS),
        "retry interval",
    );
}
