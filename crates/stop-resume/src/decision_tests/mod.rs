//! The decision table of `docs/rules.md` ("Stop / resume"), one case per row; `cases` holds the
//! bugs and edges.

use super::*;
use chrono::{Duration, TimeZone};
use domain::{
    CardCategory::{Industry, Normal},
    CarrierId, DeviceId, MonthCounters,
    NetworkStatus::{Online, Stopped},
    NewCard, NewPackageUsage, PackageStatus, PackageUsageId,
    RealNameStatus::{NotVerified, Verified},
    StopReason::{Manual, NoPackage, NotRealname, Protect, TrafficExhausted},
};
use rust_decimal_macros::dec;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 2, 8, 0, 0)
        .single()
        .unwrap_or_default()
}

const CARD: CardId = CardId(7);
const DEVICE: DeviceId = DeviceId(70);

fn card(real: RealNameStatus, net: NetworkStatus, reason: Option<StopReason>) -> Card {
    Card {
        id: CARD,
        facts: NewCard {
            iccid: "8986000000000000007".into(),
            msisdn: None,
            carrier_id: CarrierId(1),
            card_category: Normal,
            status: 1,
            real_name_status: real,
            network_status: net,
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

/// `c` bound to device [`DEVICE`].
fn bound(c: Card) -> Card {
    Card {
        facts: NewCard {
            device_id: Some(DEVICE),
            ..c.facts
        },
        ..c
    }
}

fn pkg(owner: PackageOwner, limit: Option<Decimal>, used: Decimal) -> PackageUsage {
    let bought = now() - Duration::days(1);
    NewPackageUsage::active(
        owner,
        limit,
        Decimal::ONE,
        used,
        bought,
        now() + Duration::days(29),
    )
    .stored(PackageUsageId(1), bought)
}

fn own(limit: Option<Decimal>, used: Decimal) -> PackageUsage {
    pkg(PackageOwner::Card(CARD), limit, used)
}

fn healthy() -> Vec<PackageUsage> {
    vec![own(Some(dec!(100)), dec!(10))]
}

const NONE: ProtectEvidence = ProtectEvidence {
    stop: false,
    start: false,
};

fn act(c: &Card, p: &[PackageUsage], protect: ProtectEvidence) -> Action {
    decide(c, p, protect, now()).action
}

fn nothing(why: NothingWhy) -> Action {
    Action::Nothing { why }
}

#[test]
fn decision_table_one_case_per_row() {
    let exhausted = vec![own(Some(dec!(100)), dec!(100))];
    let cases: Vec<(&str, Card, Vec<PackageUsage>, ProtectEvidence, Action)> = vec![
        (
            "1a: stop protect key -> nothing, even with a reason on an online card",
            bound(card(NotVerified, Online, None)),
            vec![],
            ProtectEvidence {
                stop: true,
                start: false,
            },
            nothing(NothingWhy::ProtectPeriod),
        ),
        (
            "1b: start protect key -> nothing, even for a resumable card",
            bound(card(Verified, Stopped, Some(NoPackage))),
            vec![pkg(PackageOwner::Device(DEVICE), Some(dec!(100)), dec!(0))],
            ProtectEvidence {
                stop: false,
                start: true,
            },
            nothing(NothingWhy::ProtectPeriod),
        ),
        (
            "2: reason, online -> stop",
            card(Verified, Online, None),
            vec![],
            NONE,
            Action::Stopped { reason: NoPackage },
        ),
        (
            "3: reason, stopped for another automatic reason -> reason change",
            card(Verified, Stopped, Some(NoPackage)),
            exhausted.clone(),
            NONE,
            Action::ReasonChanged {
                from: Some(NoPackage),
                to: TrafficExhausted,
            },
        ),
        (
            "3b: reason, stopped by protect (automatic) -> reason change",
            card(NotVerified, Stopped, Some(Protect)),
            healthy(),
            NONE,
            Action::ReasonChanged {
                from: Some(Protect),
                to: NotRealname,
            },
        ),
        (
            "4a: reason, stopped for that reason -> nothing",
            card(Verified, Stopped, Some(TrafficExhausted)),
            exhausted.clone(),
            NONE,
            nothing(NothingWhy::AlreadyStopped),
        ),
        (
            "4b: reason, stopped manually -> nothing (no rewrite of manual)",
            card(NotVerified, Stopped, Some(Manual)),
            vec![],
            NONE,
            nothing(NothingWhy::ManualStop),
        ),
        (
            "5: no reason, stopped automatically -> start",
            card(Verified, Stopped, Some(TrafficExhausted)),
            healthy(),
            NONE,
            Action::Started,
        ),
        (
            "6: no reason, stopped manually -> nothing",
            card(Verified, Stopped, Some(Manual)),
            healthy(),
            NONE,
            nothing(NothingWhy::ManualStop),
        ),
        (
            "7: no reason, online -> nothing",
            card(Verified, Online, None),
            healthy(),
            NONE,
            nothing(NothingWhy::AlreadyOnline),
        ),
    ];
    for (name, c, packages, protect, want) in cases {
        assert_eq!(act(&c, &packages, protect), want, "{name}");
    }
}

#[test]
fn stopped_without_a_recorded_reason_counts_as_automatic() {
    assert_eq!(
        act(&card(Verified, Stopped, None), &healthy(), NONE),
        Action::Started
    );
    assert_eq!(
        act(&card(Verified, Stopped, None), &[], NONE),
        Action::ReasonChanged {
            from: None,
            to: NoPackage
        }
    );
}

mod cases;
mod decisive;
