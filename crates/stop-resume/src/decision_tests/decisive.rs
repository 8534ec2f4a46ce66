//! Which polls are decisive (`crate::decisive_poll`), on the decision table's fixtures.

use super::*;
use crate::decisive_poll;
use domain::TaskType;

fn running() -> Card {
    card(Verified, Online, None)
}

fn usage_decisive(packages: &[PackageUsage]) -> bool {
    decisive_poll(TaskType::Carddata, &running(), Some(packages), now())
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
    assert!(!decisive_poll(TaskType::Carddata, &running(), None, now()));
    // A card already stopped: its usage decides nothing more.
    let stopped = card(Verified, Stopped, Some(TrafficExhausted));
    let full = [own(Some(dec!(1000)), dec!(1000))];
    assert!(!decisive_poll(
        TaskType::Carddata,
        &stopped,
        Some(&full),
        now()
    ));
}

#[test]
fn real_name_is_decisive_for_a_card_waiting_on_it() {
    let realname = |c: &Card| decisive_poll(TaskType::Realname, c, None, now());
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
            None,
            now(),
        )
    };
    assert!(package(Some(NoPackage)));
    assert!(package(Some(TrafficExhausted)));
    assert!(!package(Some(Manual)));
    assert!(!package(Some(NotRealname)));
    assert!(!package(None));
    assert!(!decisive_poll(TaskType::Protect, &running(), None, now()));
}
