//! Which polls are decisive (`crate::decisive_poll`), on the decision table's fixtures.

use super::*;
use crate::{UsageReading, decisive_poll};
use domain::TaskType;

fn running() -> Card {
    card(Verified, Online, None)
}

fn usage_decisive(packages: &[PackageUsage]) -> bool {
    usage_decisive_at(packages, Decimal::ZERO)
}

/// With `counted_mb` counted by the poll that read `packages`.
fn usage_decisive_at(packages: &[PackageUsage], counted_mb: Decimal) -> bool {
    let usage = UsageReading {
        packages: Some(packages),
        counted_mb,
    };
    decisive_poll(TaskType::Carddata, &running(), usage, now())
}

/// A poll that read nothing of usage (the real-name, package and protect polls).
fn no_usage() -> UsageReading<'static> {
    UsageReading::default()
}

#[test]
fn a_usage_poll_is_decisive_from_ninety_percent_of_the_allowance() {
    assert!(!usage_decisive(&[own(Some(dec!(1000)), dec!(899.9))]));
    assert!(usage_decisive(&[own(Some(dec!(1000)), dec!(900))]));
    // Over the limit and still running (the stop is not written yet): decisive.
    assert!(usage_decisive(&[own(Some(dec!(1000)), dec!(1200))]));
    // Summed over the valid packages: 950 of 2,000 used is far from the limit.
    assert!(!usage_decisive(&[
        own(Some(dec!(1000)), dec!(950)),
        own(Some(dec!(1000)), dec!(0)),
    ]));
}

#[test]
fn a_usage_poll_is_decisive_when_less_is_left_than_the_last_poll_counted() {
    // 700 of 1,000 used: 300 left. At 100 MB a poll it is three polls away; at 300, one.
    let packages = [own(Some(dec!(1000)), dec!(700))];
    assert!(!usage_decisive_at(&packages, dec!(100)));
    assert!(usage_decisive_at(&packages, dec!(300)));
    // Unlimited: never, whatever the pace.
    assert!(!usage_decisive_at(&[own(None, dec!(700))], dec!(5000)));
}

#[test]
fn an_unlimited_expired_or_missing_package_leaves_the_usage_poll_plain() {
    assert!(!usage_decisive(&[
        own(Some(dec!(1000)), dec!(999)),
        own(None, dec!(0)),
    ]));
    // The expired package does not count: the valid one has room.
    let mut expired = own(Some(dec!(1000)), dec!(999));
    expired.spec.expires_at = Some(now() - Duration::days(1));
    assert!(!usage_decisive(&[expired, own(Some(dec!(1000)), dec!(10))]));
    assert!(!usage_decisive(&[]));
    assert!(!decisive_poll(
        TaskType::Carddata,
        &running(),
        no_usage(),
        now()
    ));
    // A card already stopped: its usage decides nothing more.
    let stopped = card(Verified, Stopped, Some(TrafficExhausted));
    let full = [own(Some(dec!(1000)), dec!(1000))];
    let usage = UsageReading {
        packages: Some(&full),
        counted_mb: dec!(10),
    };
    assert!(!decisive_poll(TaskType::Carddata, &stopped, usage, now()));
}

#[test]
fn real_name_is_decisive_for_a_card_waiting_on_it() {
    let realname = |c: &Card| decisive_poll(TaskType::Realname, c, no_usage(), now());
    assert!(realname(&card(NotVerified, Stopped, Some(NotRealname))));
    assert!(!realname(&running()));
    // Industry cards are exempt; an operator's stop is never lifted by automation.
    let mut industry = card(NotVerified, Online, None);
    industry.facts.card_category = Industry;
    assert!(!realname(&industry));
    assert!(!realname(&card(NotVerified, Stopped, Some(Manual))));
}

#[test]
fn packages_are_decisive_for_a_card_stopped_for_want_of_one() {
    let package = |reason| {
        decisive_poll(
            TaskType::Package,
            &card(Verified, Stopped, reason),
            no_usage(),
            now(),
        )
    };
    assert!(package(Some(NoPackage)));
    assert!(package(Some(TrafficExhausted)));
    assert!(!package(Some(Manual)));
    assert!(!package(Some(NotRealname)));
    assert!(!package(None));
    assert!(!decisive_poll(
        TaskType::Protect,
        &running(),
        no_usage(),
        now()
    ));
}
