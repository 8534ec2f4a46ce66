//! Which polls may stop or resume a card: the ones a carrier's budget should serve first.
//!
//! When a quota lets only part of the due polls through, the dispatch takes these before the
//! rest of the backlog (`polling:decisive:{type}`, see `polling_queue`'s `decisive.rs`). A poll
//! is decisive when the fact it reads is the one the decision table is waiting on:
//!
//! | type | the card | why |
//! | --- | --- | --- |
//! | carddata | running, its valid packages limited and at least 90 % used | the next usage may exhaust them: stop (`traffic_exhausted`) |
//! | realname | not real-named (and not stopped by an operator) | a verification resumes it |
//! | package | stopped for `no_package` or `traffic_exhausted` | a new package resumes it |
//! | protect | never | it asks the carrier nothing: the budget does not hold it back |
//!
//! The mark is a hint for ordering only: a wrong one costs a place in the line, never a poll
//! out of its time.

use chrono::{DateTime, Utc};
use domain::{Card, Megabytes, PackageUsage, StopReason, TaskType};
use rust_decimal::Decimal;

/// The share of the allowance left at which a running card's usage poll becomes decisive.
pub const NEAR_LIMIT_LEFT: Decimal = Decimal::from_parts(1, 0, 0, false, 1);

/// Whether the next poll of `task` of `card` may stop or resume it (the table above).
/// `packages`: the card's packages as the usage poll read them (only carddata looks at them;
/// `None` there: not read, not decisive).
pub fn decisive_poll(
    task: TaskType,
    card: &Card,
    packages: Option<&[PackageUsage]>,
    now: DateTime<Utc>,
) -> bool {
    match task {
        TaskType::Carddata => {
            card.stop_reason.is_none() && packages.is_some_and(|p| near_limit(p, now))
        }
        TaskType::Realname => {
            !card.real_name_satisfied() && card.stop_reason != Some(StopReason::Manual)
        }
        TaskType::Package => matches!(
            card.stop_reason,
            Some(StopReason::NoPackage | StopReason::TrafficExhausted)
        ),
        TaskType::Protect => false,
    }
}

/// The valid packages all have a limit and at most [`NEAR_LIMIT_LEFT`] of their summed
/// allowance is left (none valid, or one unlimited: not near).
fn near_limit(packages: &[PackageUsage], now: DateTime<Utc>) -> bool {
    let mut limit = Megabytes::ZERO;
    let mut used = Megabytes::ZERO;
    let mut any = false;
    for p in packages.iter().filter(|p| p.is_valid_at(now)) {
        let Some(l) = p.spec.data_limit_mb else {
            return false;
        };
        any = true;
        limit += l;
        used += p.spec.used_mb.min(l);
    }
    any && limit - used <= limit * NEAR_LIMIT_LEFT
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};
    use domain::{
        CardCategory, CardId, CarrierId, MonthCounters, NetworkStatus, NewCard, NewPackageUsage,
        PackageOwner, PackageUsageId, RealNameStatus,
    };
    use rust_decimal_macros::dec;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 2, 28, 23, 0, 0)
            .single()
            .unwrap_or_default()
    }

    fn card(real: RealNameStatus, category: CardCategory, reason: Option<StopReason>) -> Card {
        Card {
            id: CardId(7),
            facts: NewCard {
                iccid: "8986000000000000007".into(),
                msisdn: None,
                carrier_id: CarrierId(1),
                card_category: category,
                status: 1,
                real_name_status: real,
                network_status: if reason.is_some() {
                    NetworkStatus::Stopped
                } else {
                    NetworkStatus::Online
                },
                enable_polling: true,
                device_id: None,
            },
            stop_reason: reason,
            data_usage_mb: Decimal::ZERO,
            usage: MonthCounters::default(),
            created_at: now(),
            updated_at: now(),
            deleted_at: None,
        }
    }

    fn running() -> Card {
        card(RealNameStatus::Verified, CardCategory::Normal, None)
    }

    fn pkg(limit: Option<Decimal>, used: Decimal, expires_in_days: i64) -> PackageUsage {
        let bought = now() - Duration::days(3);
        NewPackageUsage::active(
            PackageOwner::Card(CardId(7)),
            limit,
            Decimal::ONE,
            used,
            bought,
            now() + Duration::days(expires_in_days),
        )
        .stored(PackageUsageId(1), bought)
    }

    fn usage_decisive(packages: &[PackageUsage]) -> bool {
        decisive_poll(TaskType::Carddata, &running(), Some(packages), now())
    }

    #[test]
    fn a_usage_poll_is_decisive_from_ninety_percent_of_the_allowance() {
        assert!(!usage_decisive(&[pkg(Some(dec!(1000)), dec!(899.9), 30)]));
        assert!(usage_decisive(&[pkg(Some(dec!(1000)), dec!(900), 30)]));
        // Over the limit and still running (the stop is not written yet): decisive.
        assert!(usage_decisive(&[pkg(Some(dec!(1000)), dec!(1200), 30)]));
        // Summed over the valid packages: 950 of 2,000 used is far from the limit.
        assert!(!usage_decisive(&[
            pkg(Some(dec!(1000)), dec!(950), 30),
            pkg(Some(dec!(1000)), dec!(0), 30),
        ]));
    }

    #[test]
    fn an_unlimited_expired_or_missing_package_leaves_the_usage_poll_plain() {
        assert!(!usage_decisive(&[
            pkg(Some(dec!(1000)), dec!(999), 30),
            pkg(None, dec!(0), 30),
        ]));
        // The expired package does not count: the valid one has room.
        assert!(!usage_decisive(&[
            pkg(Some(dec!(1000)), dec!(999), -1),
            pkg(Some(dec!(1000)), dec!(10), 30),
        ]));
        assert!(!usage_decisive(&[]));
        assert!(!decisive_poll(TaskType::Carddata, &running(), None, now()));
        // A card already stopped: its usage decides nothing more.
        let stopped = card(
            RealNameStatus::Verified,
            CardCategory::Normal,
            Some(StopReason::TrafficExhausted),
        );
        let full = [pkg(Some(dec!(1000)), dec!(1000), 30)];
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
        assert!(realname(&card(
            RealNameStatus::NotVerified,
            CardCategory::Normal,
            Some(StopReason::NotRealname)
        )));
        assert!(!realname(&running()));
        // Industry cards are exempt; an operator's stop is never lifted by automation.
        assert!(!realname(&card(
            RealNameStatus::NotVerified,
            CardCategory::Industry,
            None
        )));
        assert!(!realname(&card(
            RealNameStatus::NotVerified,
            CardCategory::Normal,
            Some(StopReason::Manual)
        )));
    }

    #[test]
    fn packages_are_decisive_for_a_card_stopped_for_want_of_one() {
        let package = |reason| {
            decisive_poll(
                TaskType::Package,
                &card(RealNameStatus::Verified, CardCategory::Normal, reason),
                None,
                now(),
            )
        };
        assert!(package(Some(StopReason::NoPackage)));
        assert!(package(Some(StopReason::TrafficExhausted)));
        assert!(!package(Some(StopReason::Manual)));
        assert!(!package(Some(StopReason::NotRealname)));
        assert!(!package(None));
        assert!(!decisive_poll(TaskType::Protect, &running(), None, now()));
    }
}
