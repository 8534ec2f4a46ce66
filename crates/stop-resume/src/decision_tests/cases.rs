//! The cases the seed's bugs and the rules' edges came from.

use super::*;
use domain::NewCard;

#[test]
fn bug1_bound_card_is_covered_by_its_device_package() {
    let bound = bound(card(Verified, Online, None));
    let device_pkg = pkg(PackageOwner::Device(DEVICE), Some(dec!(100)), dec!(0));
    let d = decide(&bound, std::slice::from_ref(&device_pkg), NONE, now());
    assert_eq!(d.action, nothing(NothingWhy::AlreadyOnline));
    assert_eq!(d.evidence.owner, PackageOwner::Device(DEVICE));
    assert_eq!(d.evidence.valid_packages, 1);
    // A stopped bound card resumes on the device's package.
    let stopped = Card {
        stop_reason: Some(NoPackage),
        facts: NewCard {
            network_status: Stopped,
            ..bound.facts.clone()
        },
        ..bound.clone()
    };
    assert_eq!(act(&stopped, &[device_pkg], NONE), Action::Started);
    // A row naming the bound card itself does not cover it: the device's packages do.
    assert_eq!(
        act(&bound, &[own(Some(dec!(100)), dec!(0))], NONE),
        Action::Stopped { reason: NoPackage }
    );
}

#[test]
fn expired_and_future_packages_do_not_count() {
    let c = card(Verified, Online, None);
    let mut expired = own(Some(dec!(100)), dec!(0));
    expired.spec.expires_at = Some(now());
    assert_eq!(
        act(&c, &[expired.clone()], NONE),
        Action::Stopped { reason: NoPackage }
    );
    expired.spec.status = PackageStatus::Expired;
    expired.spec.expires_at = Some(now() - Duration::days(1));
    assert_eq!(
        act(&c, &[expired], NONE),
        Action::Stopped { reason: NoPackage }
    );

    let mut future = own(Some(dec!(100)), dec!(0));
    future.spec.activated_at = Some(now() + Duration::seconds(1));
    assert_eq!(
        act(&c, &[future.clone()], NONE),
        Action::Stopped { reason: NoPackage }
    );
    let mut pending = future;
    pending.spec.status = PackageStatus::Pending;
    pending.spec.activated_at = None;
    assert_eq!(
        act(&c, &[pending], NONE),
        Action::Stopped { reason: NoPackage }
    );
}

#[test]
fn unlimited_package_is_never_exhausted() {
    let c = card(Verified, Online, None);
    let d = decide(&c, &[own(None, dec!(1000000))], NONE, now());
    assert_eq!(d.action, nothing(NothingWhy::AlreadyOnline));
    assert_eq!(d.evidence.limit_mb, None);
    // One exhausted limited package next to an unlimited one: traffic is not exhausted.
    let both = [own(Some(dec!(10)), dec!(10)), own(None, dec!(0))];
    assert_eq!(act(&c, &both, NONE), nothing(NothingWhy::AlreadyOnline));
}

#[test]
fn virtual_ratio_stops_at_80_percent_real_usage() {
    // Limit 100 virtual MB at ratio 1.25: 80 real MB used -> used_mb 100 -> exhausted.
    let c = card(Verified, Online, None);
    let mut p = own(Some(dec!(100)), dec!(80) * dec!(1.25));
    p.spec.virtual_ratio = dec!(1.25);
    let d = decide(&c, std::slice::from_ref(&p), NONE, now());
    assert_eq!(
        d.action,
        Action::Stopped {
            reason: TrafficExhausted
        }
    );
    assert_eq!(
        (d.evidence.used_mb, d.evidence.limit_mb),
        (dec!(100.00), Some(dec!(100)))
    );
    p.spec.used_mb = dec!(79.99) * dec!(1.25);
    assert_eq!(act(&c, &[p], NONE), nothing(NothingWhy::AlreadyOnline));
}

#[test]
fn traffic_is_exhausted_only_when_every_valid_package_is() {
    let c = card(Verified, Online, None);
    let mut spent_expired = own(Some(dec!(10)), dec!(0));
    spent_expired.spec.expires_at = Some(now() - Duration::days(1));
    let mixed = [
        own(Some(dec!(10)), dec!(10)),
        own(Some(dec!(10)), dec!(5)),
        spent_expired,
    ];
    assert_eq!(act(&c, &mixed, NONE), nothing(NothingWhy::AlreadyOnline));
    let spent = [own(Some(dec!(10)), dec!(10)), own(Some(dec!(20)), dec!(25))];
    assert_eq!(
        act(&c, &spent, NONE),
        Action::Stopped {
            reason: TrafficExhausted
        }
    );
}

#[test]
fn industry_card_is_exempt_from_real_name() {
    let normal = card(NotVerified, Online, None);
    let industry = Card {
        facts: NewCard {
            card_category: Industry,
            ..normal.facts
        },
        ..normal
    };
    let d = decide(&industry, &healthy(), NONE, now());
    assert_eq!(d.action, nothing(NothingWhy::AlreadyOnline));
    assert!(d.evidence.real_name_satisfied);
    // A normal card in the same state is stopped.
    assert_eq!(
        act(&card(NotVerified, Online, None), &healthy(), NONE),
        Action::Stopped {
            reason: NotRealname
        }
    );
}

#[test]
fn reason_precedence_not_realname_then_no_package_then_exhausted() {
    let c = card(NotVerified, Online, None);
    // All three at once: not real-named, no valid package (the one there is expired), and the
    // only package spent.
    let mut spent_expired = own(Some(dec!(10)), dec!(10));
    spent_expired.spec.expires_at = Some(now() - Duration::days(1));
    assert_eq!(
        act(&c, &[spent_expired.clone()], NONE),
        Action::Stopped {
            reason: NotRealname
        }
    );
    let verified = card(Verified, Online, None);
    assert_eq!(
        act(&verified, &[spent_expired], NONE),
        Action::Stopped { reason: NoPackage }
    );
    assert_eq!(
        act(&verified, &[own(Some(dec!(10)), dec!(10))], NONE),
        Action::Stopped {
            reason: TrafficExhausted
        }
    );
    // Not real-named and exhausted: not_realname wins.
    assert_eq!(
        act(&c, &[own(Some(dec!(10)), dec!(10))], NONE),
        Action::Stopped {
            reason: NotRealname
        }
    );
}

#[test]
fn manual_stop_is_never_resumed_or_rewritten() {
    for packages in [healthy(), vec![], vec![own(Some(dec!(1)), dec!(1))]] {
        for real in [Verified, NotVerified] {
            let c = card(real, Stopped, Some(Manual));
            assert_eq!(act(&c, &packages, NONE), nothing(NothingWhy::ManualStop));
        }
    }
}

#[test]
fn protect_key_means_nothing_whatever_the_state() {
    for protect in [
        ProtectEvidence {
            stop: true,
            start: false,
        },
        ProtectEvidence {
            stop: false,
            start: true,
        },
    ] {
        for (net, reason) in [
            (Online, None),
            (Stopped, Some(NoPackage)),
            (Stopped, Some(Manual)),
        ] {
            for packages in [healthy(), vec![]] {
                let c = bound(card(Verified, net, reason));
                let d = decide(&c, &packages, protect, now());
                assert_eq!(d.action, nothing(NothingWhy::ProtectPeriod));
                assert_eq!(d.evidence.protect, protect);
            }
        }
    }
}

#[test]
fn evidence_explains_the_decision() {
    let c = card(Verified, Online, None);
    let packages = [
        own(Some(dec!(100)), dec!(100)),
        own(Some(dec!(50)), dec!(50)),
    ];
    let e = decide(&c, &packages, NONE, now()).evidence;
    assert_eq!((e.valid_packages, e.exhausted_packages), (2, 2));
    assert_eq!((e.used_mb, e.limit_mb), (dec!(150), Some(dec!(150))));
    assert_eq!(e.holding_reason, Some(TrafficExhausted));
    assert_eq!((e.network_status, e.stop_reason), (Online, None));
    assert_eq!(e.evaluated_at, now());
    let json = serde_json::to_value(decide(&c, &packages, NONE, now())).unwrap_or_default();
    assert_eq!(json["action"]["action"], "stopped");
    assert_eq!(json["action"]["reason"], "traffic_exhausted");
}
