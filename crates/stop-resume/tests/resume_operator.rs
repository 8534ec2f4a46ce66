//! Resume, operator actions, device packages and deduction end to end: real PostgreSQL and Redis (test-support), the real stores, the HTTP
//! gateway client against an in-process gateway-sim.

mod common;

use common::World;
use domain::{NetworkStatus, PackageOwner, RealNameStatus, StopReason};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use stop_resume::{Action, NothingWhy, Trigger};

#[tokio::test]
async fn resume_after_renewal() {
    let w = World::new().await;
    let card = w.card("89004", None).await;
    let owner = PackageOwner::Card(card);
    w.package(owner, Some(dec!(100)), Decimal::ONE, dec!(100), 10)
        .await;
    let d = w
        .service
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::Stopped {
            reason: StopReason::TrafficExhausted
        }
    );

    // Renewal: a fresh package.
    w.package(owner, Some(dec!(1024)), Decimal::ONE, Decimal::ZERO, 30)
        .await;
    let d = w
        .service
        .evaluate_and_act(card, Trigger::PackageActivation)
        .await
        .expect("evaluates");
    assert_eq!(d.action, Action::Started);
    assert_eq!(d.evidence.valid_packages, 2);
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(w.calls("89004"), (1, 1));
    let log = w.log(card).await;
    assert_eq!(log.len(), 2);
    assert_eq!(log[1].entry.trigger, "package_activation");
    assert_eq!(
        (log[1].entry.to_status, log[1].entry.stop_reason),
        (NetworkStatus::Online, None)
    );
}

#[tokio::test]
async fn manual_stop_is_never_resumed_by_automation() {
    let w = World::new().await;
    let card = w.card("89006", None).await;
    w.package(
        PackageOwner::Card(card),
        Some(dec!(100)),
        Decimal::ONE,
        Decimal::ZERO,
        30,
    )
    .await;

    let d = w
        .service
        .stop_by_operator(card)
        .await
        .expect("operator stops")
        .decision;
    assert_eq!(
        d.action,
        Action::Stopped {
            reason: StopReason::Manual
        }
    );
    for trigger in [
        Trigger::Carddata,
        Trigger::Package,
        Trigger::Realname,
        Trigger::DataReset,
        Trigger::Protect,
    ] {
        let d = w
            .service
            .evaluate_and_act(card, trigger)
            .await
            .expect("evaluates");
        assert_eq!(
            d.action,
            Action::Nothing {
                why: NothingWhy::ManualStop
            }
        );
    }
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::Manual))
    );
    assert_eq!(w.calls("89006"), (1, 0));

    // Only an operator lifts it.
    let d = w
        .service
        .start_by_operator(card)
        .await
        .expect("operator starts")
        .decision;
    assert_eq!(d.action, Action::Started);
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    let log = w.log(card).await;
    assert_eq!(log.len(), 2);
    assert!(log.iter().all(|r| r.entry.trigger == "operator"));
    assert_eq!(log[0].entry.stop_reason, Some(StopReason::Manual));
    assert_eq!(w.calls("89006"), (1, 1));
}

#[tokio::test]
async fn operator_stop_of_a_stopped_card_only_marks_it_manual() {
    let w = World::new().await;
    let card = w.card("89007", None).await;
    w.service
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect("evaluates");
    let d = w
        .service
        .stop_by_operator(card)
        .await
        .expect("operator stops")
        .decision;
    assert_eq!(
        d.action,
        Action::ReasonChanged {
            from: Some(StopReason::NoPackage),
            to: StopReason::Manual
        }
    );
    assert_eq!(w.calls("89007"), (1, 0));
    let again = w
        .service
        .stop_by_operator(card)
        .await
        .expect("operator stops")
        .decision;
    assert_eq!(
        again.action,
        Action::Nothing {
            why: NothingWhy::AlreadyStopped
        }
    );
    assert_eq!(w.log(card).await.len(), 2);
}

#[tokio::test]
async fn bound_card_uses_device_packages_and_respects_protect_periods() {
    let w = World::new().await;
    let device = w.device("DEV-1").await;
    let card = w.card("89008", Some(device)).await;
    w.package(
        PackageOwner::Device(device),
        Some(dec!(100)),
        Decimal::ONE,
        Decimal::ZERO,
        30,
    )
    .await;

    // Seed bug 1: the device's package covers the bound card.
    let d = w
        .service
        .evaluate_and_act(card, Trigger::Package)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::Nothing {
            why: NothingWhy::AlreadyOnline
        }
    );
    assert_eq!(d.evidence.owner, PackageOwner::Device(device));

    // Inside a protect period nothing happens, whatever the table would say.
    w.stores
        .cards
        .set_real_name(card, RealNameStatus::NotVerified)
        .await
        .expect("real-name");
    w.protect
        .set_start(device, std::time::Duration::from_secs(60))
        .await
        .expect("protect");
    let d = w
        .service
        .evaluate_and_act(card, Trigger::Realname)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::Nothing {
            why: NothingWhy::ProtectPeriod
        }
    );
    assert!(d.evidence.protect.start);
    assert_eq!(w.calls("89008"), (0, 0));

    // Once it ends, the table applies.
    w.protect.clear(device).await.expect("protect ends");
    let d = w
        .service
        .evaluate_and_act(card, Trigger::Protect)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::Stopped {
            reason: StopReason::NotRealname
        }
    );
}

#[tokio::test]
async fn deduction_consumes_in_expiry_order_with_overage_on_the_last() {
    let w = World::new().await;
    let device = w.device("DEV-2").await;
    let card = w.card("89009", Some(device)).await;
    let owner = PackageOwner::Device(device);
    // Expires later: ratio 1, 100 virtual MB of room.
    let late = w
        .package(owner, Some(dec!(100)), dec!(1), Decimal::ZERO, 20)
        .await;
    // Expires first: 50 virtual MB of room at ratio 1.25 = 40 real MB.
    let early = w
        .package(owner, Some(dec!(100)), dec!(1.25), dec!(50), 5)
        .await;

    let now = domain::Clock::now(&w.clock);
    let steps = w
        .stores
        .packages
        .deduct_data_usage(owner, dec!(150), now)
        .await
        .expect("deducts");
    let real: Decimal = steps.iter().map(|s| s.real_mb).sum();
    assert_eq!(real, dec!(150), "every real megabyte lands somewhere");
    assert_eq!(
        steps.iter().map(|s| s.id).collect::<Vec<_>>(),
        vec![early.id, late.id]
    );

    let after = w.stores.packages.usages_of(owner).await.expect("reads");
    let used = |id| {
        after
            .iter()
            .find(|p| p.id == id)
            .map(|p| p.spec.used_mb)
            .unwrap_or_default()
    };
    assert_eq!(used(early.id), dec!(100), "filled first, at its ratio");
    // 40 real went to the early package; 110 real land on the late one: 100 room + 10 overage.
    assert_eq!(used(late.id), dec!(110));

    // Every valid package is now exhausted: the card stops.
    let d = w
        .service
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::Stopped {
            reason: StopReason::TrafficExhausted
        }
    );
}
