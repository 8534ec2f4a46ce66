//! The periodic package jobs: bounded store batches, each followed by an evaluation of the
//! touched cards, on the deployment's calendar.

mod common;

use chrono::{Duration, TimeZone, Utc};
use chrono_tz::Asia::Shanghai;
use common::{CardSpec, World};
use domain::calendar::{add_months_anchored, local_day};
use domain::{NetworkStatus, PackageOwner, PackageStatus, ResetCycle, StopReason};
use rust_decimal_macros::dec;
use task_handlers::{JobReport, PackageJobs};

fn expiring(w: &World, owner: PackageOwner) -> domain::NewPackageUsage {
    let mut p = w.package(owner, Some(dec!(1024)), dec!(10));
    p.activated_at = Some(w.now() - Duration::days(30));
    p.expires_at = Some(w.now() - Duration::minutes(1));
    p
}

fn queued(w: &World, owner: PackageOwner) -> domain::NewPackageUsage {
    let mut p = w.package(owner, Some(dec!(2048)), dec!(0));
    p.status = PackageStatus::Pending;
    p.activated_at = None;
    p.expires_at = None;
    p
}

/// Expiry with a queued pending package: the next one activates from now and the card stays
/// online (evaluated, nothing to do).
#[tokio::test]
async fn expiry_with_a_pending_package_keeps_the_card_online() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(100)).await;
    let old = w.add_package(expiring(&w, PackageOwner::Card(card))).await;
    let next = w.add_package(queued(&w, PackageOwner::Card(card))).await;

    let report = PackageJobs::new(&w.deps)
        .activation_check()
        .await
        .expect("job runs");

    assert_eq!(
        report,
        JobReport {
            batches: 1,
            packages: 1,
            owners: 1,
            cards: 1,
            unchanged: 1,
            ..JobReport::default()
        }
    );
    let pkgs = w.packages_of(PackageOwner::Card(card)).await;
    let status = |id| {
        pkgs.iter()
            .find(|p| p.id == id)
            .map(|p| (p.spec.status, p.spec.activated_at))
    };
    assert_eq!(status(old.id).map(|s| s.0), Some(PackageStatus::Expired));
    assert_eq!(
        status(next.id),
        Some((PackageStatus::Active, Some(w.now())))
    );
    assert_eq!(
        w.db_card(card).await.facts.network_status,
        NetworkStatus::Online
    );
    assert_eq!(w.calls(card), (0, 0));
}

/// Expiry without a pending package: the card stops for `no_package`.
#[tokio::test]
async fn expiry_without_a_pending_package_stops_the_card() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(101)).await;
    w.add_package(expiring(&w, PackageOwner::Card(card))).await;
    w.cache
        .set(&w.db_card(card).await.identity(None))
        .await
        .expect("cached");

    let report = PackageJobs::new(&w.deps)
        .activation_check()
        .await
        .expect("job runs");

    assert_eq!(
        report,
        JobReport {
            batches: 1,
            packages: 1,
            owners: 1,
            cards: 1,
            stopped: 1,
            ..JobReport::default()
        }
    );
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::NoPackage))
    );
    assert_eq!(w.calls(card), (1, 0));
    let log = w.log(card).await;
    assert_eq!(log[0].entry.trigger, "package_activation");
    assert_eq!(
        w.cache.get(card).await.expect("cache"),
        None,
        "stale snapshot dropped"
    );
}

/// A device's package expires: every card bound to it is evaluated (one `ids_of_devices` call).
#[tokio::test]
async fn device_expiry_evaluates_every_bound_card() {
    let w = World::new().await;
    let device = w.device("D-JOB").await;
    let a = w.card(CardSpec::new(102).on(device)).await;
    let b = w.card(CardSpec::new(103).on(device)).await;
    let untouched = w.card(CardSpec::new(104)).await;
    w.add_package(expiring(&w, PackageOwner::Device(device)))
        .await;

    let report = PackageJobs::new(&w.deps)
        .activation_check()
        .await
        .expect("job runs");

    assert_eq!(
        report,
        JobReport {
            batches: 1,
            packages: 1,
            owners: 1,
            cards: 2,
            stopped: 2,
            ..JobReport::default()
        }
    );
    assert_eq!(
        (w.calls(a), w.calls(b), w.calls(untouched)),
        ((1, 0), (1, 0), (0, 0))
    );
}

/// Monthly reset: `used_mb = 0`, `next_reset_at` one month on, the `traffic_exhausted` card
/// resumes.
#[tokio::test]
async fn monthly_reset_resumes_a_traffic_exhausted_card() {
    let w = World::new().await;
    let card = w
        .card(CardSpec::new(105).stopped(StopReason::TrafficExhausted))
        .await;
    let mut p = w.package(PackageOwner::Card(card), Some(dec!(1024)), dec!(1024));
    p.reset_cycle = ResetCycle::Monthly;
    let due = w.now() - Duration::minutes(1);
    p.next_reset_at = Some(due);
    let pkg = w.add_package(p).await;

    let report = PackageJobs::new(&w.deps)
        .data_reset()
        .await
        .expect("job runs");

    assert_eq!(
        report,
        JobReport {
            batches: 1,
            packages: 1,
            owners: 1,
            cards: 1,
            started: 1,
            ..JobReport::default()
        }
    );
    let after = w
        .packages_of(PackageOwner::Card(card))
        .await
        .into_iter()
        .find(|p| p.id == pkg.id)
        .expect("pkg");
    assert_eq!(after.spec.used_mb, dec!(0));
    assert_eq!(
        after.spec.next_reset_at,
        Some(add_months_anchored(
            due,
            1,
            local_day(due, &Shanghai),
            &Shanghai
        ))
    );
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(w.calls(card), (0, 1));
    assert_eq!(w.log(card).await[0].entry.trigger, "data_reset");
}

/// Nothing due: no evaluation at all.
#[tokio::test]
async fn nothing_due_evaluates_nothing() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(106)).await;
    let jobs = PackageJobs::new(&w.deps);
    let nothing = JobReport {
        batches: 1,
        ..JobReport::default()
    };
    assert_eq!(jobs.activation_check().await.expect("runs"), nothing);
    assert_eq!(jobs.data_reset().await.expect("runs"), nothing);
    assert_eq!(
        w.calls(card),
        (0, 0),
        "a card without packages was not evaluated"
    );
}

/// A backlog larger than a batch: several short batches, each evaluated, on the deployment's
/// calendar (`HandlerSettings.timezone` = Asia/Shanghai): a reset due on December 1st at local
/// midnight moves to January 1st, not to December 31st (a month added in UTC).
#[tokio::test]
async fn a_reset_backlog_runs_in_batches_on_the_local_calendar() {
    let w = World::new().await;
    assert_eq!(w.deps.settings.timezone, Shanghai);
    let due = Shanghai
        .with_ymd_and_hms(2026, 12, 1, 0, 0, 0)
        .single()
        .expect("local time")
        .with_timezone(&Utc);
    w.clock.set(due + Duration::seconds(30));
    let mut cards = Vec::new();
    for id in 110..115 {
        let card = w.card(CardSpec::new(id)).await;
        let mut p = w.package(PackageOwner::Card(card), Some(dec!(1024)), dec!(100));
        p.reset_cycle = ResetCycle::Monthly;
        p.next_reset_at = Some(due);
        w.add_package(p).await;
        cards.push(card);
    }

    let report = PackageJobs::new(&w.deps)
        .with_batch(2)
        .data_reset()
        .await
        .expect("job runs");

    assert_eq!(
        (report.batches, report.packages, report.owners, report.cards),
        (3, 5, 5, 5)
    );
    let january = Shanghai
        .with_ymd_and_hms(2027, 1, 1, 0, 0, 0)
        .single()
        .expect("local time")
        .with_timezone(&Utc);
    for card in cards {
        let pkgs = w.packages_of(PackageOwner::Card(card)).await;
        assert_eq!(
            pkgs.iter()
                .map(|p| (p.spec.used_mb, p.spec.next_reset_at))
                .collect::<Vec<_>>(),
            vec![(dec!(0), Some(january))]
        );
    }
}
