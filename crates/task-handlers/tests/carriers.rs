//! The carrier conformance suite: the same scenarios, end to end through the real handlers,
//! stores (PostgreSQL), queues (Redis) and stop/resume, against every protocol's adapter talking
//! to that platform on `gateway-sim`. One module per protocol; each test's name is the scenario.
//!
//! The scenarios of the platform adapters: a real-name change, usage growth and
//! month rollover, a package exhausted → stopped once → renewed → resumed, throttling, a token
//! expiring mid-run, a 5xx and an HTML answer, bad credentials (nothing stopped, the carrier's
//! health says why) and a partial batch answer.

mod common;

use chrono::Duration;
use common::{CardSpec, World, iccid};
use domain::{
    CardId, CarrierHealthState, CarrierPackage, CarrierProtocol, Credentials, NetworkStatus,
    PackageOwner, PackageStatus, RealNameStatus, StopReason, TaskType,
};
use gateway::carriers::CarrierRouter;
use gateway::{CallKind, CarrierGateway, GatewayError};
use gateway_sim::{
    Malformed, Script, ScriptStep, SimAccount, SimAccountPatch, SimCardPatch, SimCardSpec,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use std::sync::Arc;
use task_handlers::Outcome;

/// What a platform can tell us, as its page in `docs/carriers/` records.
#[derive(Debug, Clone, Copy)]
struct Caps {
    /// What the platform says of real-name (KYC).
    kyc: Kyc,
    /// The platform reports packages (offerings, quotas) with their use.
    packages: bool,
    /// The platform authenticates with a token it issues (and lets expire).
    tokens: bool,
}

/// How a platform answers a real-name query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kyc {
    /// It reports the card's status.
    Reported,
    /// It has no KYC; the cards it sells are registered, so every card it knows is verified.
    AlwaysVerified,
    /// It has no KYC and the adapter says so (`Unsupported`): the card is left as it is.
    Unsupported,
}

fn caps(p: CarrierProtocol) -> Caps {
    match p {
        CarrierProtocol::CmpJson => Caps {
            kyc: Kyc::Reported,
            packages: true,
            tokens: false,
        },
        CarrierProtocol::OneLink => Caps {
            kyc: Kyc::Reported,
            packages: true,
            tokens: true,
        },
        CarrierProtocol::Ctcc5gcmp => Caps {
            kyc: Kyc::Reported,
            packages: true,
            tokens: false,
        },
        CarrierProtocol::ControlCenter => Caps {
            kyc: Kyc::Unsupported,
            packages: false,
            tokens: false,
        },
        CarrierProtocol::OneNce => Caps {
            kyc: Kyc::AlwaysVerified,
            packages: true,
            tokens: true,
        },
        CarrierProtocol::Emnify => Caps {
            kyc: Kyc::AlwaysVerified,
            packages: true,
            tokens: true,
        },
    }
}

async fn world(p: CarrierProtocol) -> (World, Arc<CarrierRouter>) {
    World::for_carrier(p, |_| {}).await
}

fn patch(w: &World, card: CardId, patch: SimCardPatch) {
    w.sim
        .state()
        .patch_card(&iccid(card.get()), patch)
        .expect("patch")
        .expect("sim card");
}

/// Registers the card with fixed usage (growth 0) at `total` MB.
fn fixed_usage(w: &World, card: CardId, total: Decimal) {
    patch(
        w,
        card,
        SimCardPatch {
            month_total_mb: Some(total),
            growth_mb_per_query: Some(Decimal::ZERO),
            ..Default::default()
        },
    );
}

/// Every credential value of the sim's account for `p`: none may show in any text we produce.
fn secrets(p: CarrierProtocol) -> Vec<String> {
    SimAccount::default_for(p)
        .credentials
        .into_values()
        .collect()
}

fn assert_no_secret(p: CarrierProtocol, text: &str) {
    for s in secrets(p) {
        assert!(!text.contains(&s), "{p}: a credential leaked into `{text}`");
    }
}

/// A real-name change at the carrier reaches the card.
async fn realname_change(p: CarrierProtocol) {
    let (w, _) = world(p).await;
    let card = w.card(CardSpec::new(100).not_real_named()).await;
    match caps(p).kyc {
        Kyc::Reported => {
            patch(
                &w,
                card,
                SimCardPatch {
                    real_name_status: Some(RealNameStatus::Verified),
                    ..Default::default()
                },
            );
            assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);
            assert_eq!(
                w.db_card(card).await.facts.real_name_status,
                RealNameStatus::Verified
            );
            // And back: the carrier withdraws it.
            patch(
                &w,
                card,
                SimCardPatch {
                    real_name_status: Some(RealNameStatus::NotVerified),
                    ..Default::default()
                },
            );
            assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);
            assert_eq!(
                w.db_card(card).await.facts.real_name_status,
                RealNameStatus::NotVerified
            );
        }
        Kyc::AlwaysVerified => {
            assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);
            assert_eq!(
                w.db_card(card).await.facts.real_name_status,
                RealNameStatus::Verified
            );
        }
        Kyc::Unsupported => {
            // Nothing known, nothing written, the card left as it is and asked again later.
            assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Skipped);
            let c = w.db_card(card).await;
            assert_eq!(c.facts.real_name_status, RealNameStatus::NotVerified);
            assert_eq!(
                c.facts.network_status,
                NetworkStatus::Online,
                "nothing stopped"
            );
            let due = w
                .score(card, TaskType::Realname)
                .await
                .expect("still queued");
            assert!(due >= w.at(3000), "rechecked after a long pause, not spun");
        }
    }
}

/// Usage grows exactly (figures that are no round number of the platform's unit), then the
/// month rolls over at our midnight.
async fn usage_growth_and_month_rollover(p: CarrierProtocol) {
    let (w, _) = world(p).await;
    let card = w.card(CardSpec::new(101)).await;
    fixed_usage(&w, card, dec!(100.25));
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    let c = w.db_card(card).await;
    assert_eq!(c.usage.current_month_usage_mb, dec!(100.25));

    fixed_usage(&w, card, dec!(150.5));
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    let c = w.db_card(card).await;
    assert_eq!(c.usage.current_month_usage_mb, dec!(150.5));
    assert_eq!(c.data_usage_mb, dec!(150.5));

    // 2026-04-30 16:00 UTC is May 1st, 00:00 in Shanghai: the carrier's new month starts.
    let may = chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 4, 30, 16, 0, 0)
        .single()
        .expect("valid time");
    w.clock.set(may);
    // The first usage query of the new month starts from 0 (the sim rolls the card over).
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    fixed_usage(&w, card, dec!(7));
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    let c = w.db_card(card).await;
    assert_eq!(
        c.usage.current_month_start_date,
        chrono::NaiveDate::from_ymd_opt(2026, 5, 1)
    );
    assert_eq!(c.usage.last_month_total_mb, dec!(150.5), "April saved");
    assert_eq!(c.usage.current_month_usage_mb, dec!(7));
    assert_eq!(c.data_usage_mb, dec!(157.5));
}

fn carrier_package(w: &World, id: &str, status: PackageStatus, used: Decimal) -> CarrierPackage {
    CarrierPackage {
        external_id: id.into(),
        status,
        used_mb: used,
        limit_mb: Some(dec!(100)),
        activated_at: Some(w.now() - Duration::days(1)),
        expires_at: Some(w.now() + Duration::days(29)),
    }
}

/// A package used up stops the card once; a renewal resumes it.
async fn package_exhausted_stop_once_renewal_resume(p: CarrierProtocol) {
    let (w, _) = world(p).await;
    let card = w.card(CardSpec::new(102)).await;
    let mut pkg = w.package(PackageOwner::Card(card), Some(dec!(100)), dec!(0));
    pkg.external_id = Some("P-1".into());
    w.add_package(pkg).await;
    fixed_usage(&w, card, dec!(100));
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::TrafficExhausted))
    );
    let view = w.sim.state().card(&iccid(card.get())).expect("sim card");
    assert_eq!(
        (view.stop_calls, view.network_status),
        (1, NetworkStatus::Stopped)
    );

    // Polled again: already stopped, no second stop.
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    assert_eq!(w.calls(card), (1, 0), "stopped once");

    // The renewal: a new package, reported by the carrier where the platform reports packages,
    // else bought through us.
    if caps(p).packages {
        w.set_carrier_packages(
            card,
            vec![
                carrier_package(&w, "P-1", PackageStatus::Expired, dec!(100)),
                carrier_package(&w, "P-2", PackageStatus::Active, dec!(0)),
            ],
        );
    } else {
        let mut renewal = w.package(PackageOwner::Card(card), Some(dec!(100)), dec!(0));
        renewal.external_id = Some("P-2".into());
        w.add_package(renewal).await;
    }
    if p == CarrierProtocol::OneLink {
        // OneLink refuses a second status change of a card within minutes (the change lock):
        // the resume is refused, the card stays stopped as the carrier has it, and the next
        // evaluation after the lock resumes it.
        assert_eq!(w.handle(TaskType::Package, card).await, Outcome::Failure);
        let c = w.db_card(card).await;
        assert_eq!(
            c.facts.network_status,
            NetworkStatus::Stopped,
            "no second decision"
        );
        let view = w.sim.state().card(&iccid(card.get())).expect("sim card");
        assert_eq!((view.start_calls, view.starts_applied), (1, 0));
        w.sim.state().set_account(
            p,
            SimAccountPatch {
                change_lock_secs: Some(0),
                ..Default::default()
            },
        );
    }
    assert_eq!(w.handle(TaskType::Package, card).await, Outcome::Success);
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None),
        "resumed after the renewal"
    );
    let view = w.sim.state().card(&iccid(card.get())).expect("sim card");
    assert_eq!(
        (view.starts_applied, view.network_status),
        (1, NetworkStatus::Online),
        "resumed once"
    );
}

/// The platform's own rate limit: the poll over it fails, is retried later, and writes nothing.
async fn throttled_by_the_platform(p: CarrierProtocol) {
    let (w, _) = world(p).await;
    let card = w.card(CardSpec::new(103)).await;
    fixed_usage(&w, card, dec!(10));
    if p == CarrierProtocol::CmpJson {
        w.sim
            .state()
            .set_faults(gateway_sim::FaultsPatch {
                quota_per_sec: Some(1),
                ..Default::default()
            })
            .expect("faults");
    } else {
        w.sim.state().set_account(
            p,
            SimAccountPatch {
                rate_limit_per_sec: Some(1),
                ..Default::default()
            },
        );
    }
    // Within one wall-clock second at most one request passes; of three polls at least one is
    // refused, and a refused poll writes nothing.
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        outcomes.push(w.handle(TaskType::Carddata, card).await);
    }
    assert!(
        outcomes.contains(&Outcome::Failure) || outcomes.contains(&Outcome::RequeuedFull),
        "{outcomes:?}"
    );
    let c = w.db_card(card).await;
    assert!(
        c.usage.current_month_usage_mb == dec!(10) || c.usage.current_month_usage_mb == dec!(0),
        "a refused poll adds nothing: {}",
        c.usage.current_month_usage_mb
    );
}

/// A token expiring mid-run is renewed without a failed poll.
async fn token_expiry_mid_run(p: CarrierProtocol) {
    let (w, _) = world(p).await;
    let card = w.card(CardSpec::new(104)).await;
    fixed_usage(&w, card, dec!(1));
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    w.sim.state().expire_tokens(p);
    fixed_usage(&w, card, dec!(2));
    assert_eq!(
        w.handle(TaskType::Carddata, card).await,
        Outcome::Success,
        "renewed transparently"
    );
    assert_eq!(w.db_card(card).await.usage.current_month_usage_mb, dec!(2));
    if caps(p).tokens {
        // Short-lived tokens: every poll past a lifetime renews.
        w.sim.state().set_account(
            p,
            SimAccountPatch {
                token_ttl_secs: Some(1),
                ..Default::default()
            },
        );
        w.sim.state().expire_tokens(p);
        fixed_usage(&w, card, dec!(3));
        assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        fixed_usage(&w, card, dec!(4));
        assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
        assert_eq!(w.db_card(card).await.usage.current_month_usage_mb, dec!(4));
    }
}

/// A 5xx and an HTML page: the poll fails, nothing is written, the card is retried later.
async fn server_error_and_html_answer(p: CarrierProtocol) {
    let (w, router) = world(p).await;
    let card = w.card(CardSpec::new(105)).await;
    fixed_usage(&w, card, dec!(5));
    for step in [
        ScriptStep::Status(503),
        ScriptStep::Malformed(Malformed::Html),
    ] {
        if p == CarrierProtocol::CmpJson && matches!(step, ScriptStep::Malformed(_)) {
            continue;
        }
        w.sim.state().set_script(Script {
            fail_next: vec![step; 4],
            call: Some(CallKind::Usage),
        });
        let before = w.db_card(card).await;
        assert_eq!(
            w.handle(TaskType::Carddata, card).await,
            Outcome::Failure,
            "{step:?}"
        );
        let after = w.db_card(card).await;
        assert_eq!(after.usage, before.usage, "{step:?}: nothing written");
        w.sim.state().set_script(Script::default());
        let health = router.health(w.now());
        assert_eq!(health[0].state, CarrierHealthState::Failing, "{step:?}");
        assert_no_secret(p, health[0].last_error.as_deref().unwrap_or(""));
    }
    // And when the carrier answers again, the poll goes through.
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    assert_eq!(w.db_card(card).await.usage.current_month_usage_mb, dec!(5));
}

/// Bad credentials: nothing is polled or stopped, and the carrier's health says why without
/// showing the credential.
async fn bad_credentials(p: CarrierProtocol) {
    let wrong = "WRONG-secret-value-4711";
    let (w, router) = World::for_carrier(p, |a| {
        let mut creds = Credentials::new();
        for f in p.credential_fields() {
            creds = creds.with(*f, wrong);
        }
        a.credentials = creds;
    })
    .await;
    let card = w.card(CardSpec::new(106)).await;
    let mut pkg = w.package(PackageOwner::Card(card), Some(dec!(100)), dec!(0));
    pkg.external_id = Some("P-1".into());
    w.add_package(pkg).await;
    fixed_usage(&w, card, dec!(500));
    if p == CarrierProtocol::CmpJson {
        // The project's own protocol has no credentials: nothing to refuse.
        assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
        return;
    }
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Failure);
    let c = w.db_card(card).await;
    assert_eq!(
        c.facts.network_status,
        NetworkStatus::Online,
        "nothing stopped"
    );
    assert_eq!(c.usage.current_month_usage_mb, dec!(0), "nothing written");
    assert_eq!(w.calls(card), (0, 0));
    let health = router.health(w.now());
    assert_eq!(health[0].state, CarrierHealthState::AuthFailed);
    let why = health[0].last_error.clone().unwrap_or_default();
    assert!(!why.is_empty());
    assert!(!why.contains(wrong), "the credential leaked: {why}");
    let probe = router.probe(domain::CarrierId(1)).await;
    assert!(matches!(probe, Err(GatewayError::Auth(_))), "{probe:?}");
}

/// A batch answer without one of the cards: the others are answered, the missing one is
/// `MissingFromBatch` (never a guess), and an unknown card is not confused with a missing one.
async fn partial_batch_answer(p: CarrierProtocol) {
    let (w, router) = world(p).await;
    let cards: Vec<SimCardSpec> = (0..3)
        .map(|i| SimCardSpec {
            month_total_mb: Decimal::from(10 + i),
            ..SimCardSpec::new(iccid(200 + i))
        })
        .collect();
    w.sim.state().upsert_cards(cards).expect("cards");
    let iccids: Vec<String> = (0..3).map(|i| iccid(200 + i)).collect();
    let carrier = domain::CarrierId(1);
    let all = router.usage_batch(carrier, &iccids).await.expect("batch");
    let totals: Vec<Decimal> = all
        .iter()
        .map(|r| r.as_ref().expect("answered").month_total_mb)
        .collect();
    assert_eq!(totals, vec![dec!(10), dec!(11), dec!(12)]);
    if router.batch_size(carrier) > 1 {
        w.sim.state().set_script(Script {
            fail_next: vec![ScriptStep::Malformed(Malformed::DropLast)],
            call: Some(CallKind::Usage),
        });
        let partial = router.usage_batch(carrier, &iccids).await.expect("batch");
        assert_eq!(partial.len(), 3);
        assert!(partial[0].is_ok() && partial[1].is_ok(), "{partial:?}");
        assert!(
            matches!(partial[2], Err(GatewayError::MissingFromBatch)),
            "{partial:?}"
        );
    }
}

macro_rules! conformance {
    ($($module:ident => $protocol:expr),* $(,)?) => {$(
        mod $module {
            use super::*;

            #[tokio::test]
            async fn realname_change() {
                super::realname_change($protocol).await;
            }

            #[tokio::test]
            async fn usage_growth_and_month_rollover() {
                super::usage_growth_and_month_rollover($protocol).await;
            }

            #[tokio::test]
            async fn package_exhausted_stop_once_renewal_resume() {
                super::package_exhausted_stop_once_renewal_resume($protocol).await;
            }

            #[tokio::test]
            async fn throttled_by_the_platform() {
                super::throttled_by_the_platform($protocol).await;
            }

            #[tokio::test]
            async fn token_expiry_mid_run() {
                super::token_expiry_mid_run($protocol).await;
            }

            #[tokio::test]
            async fn server_error_and_html_answer() {
                super::server_error_and_html_answer($protocol).await;
            }

            #[tokio::test]
            async fn bad_credentials() {
                super::bad_credentials($protocol).await;
            }

            #[tokio::test]
            async fn partial_batch_answer() {
                super::partial_batch_answer($protocol).await;
            }
        }
    )*};
}

conformance! {
    cmp_json => CarrierProtocol::CmpJson,
    onelink => CarrierProtocol::OneLink,
    ctcc_5gcmp => CarrierProtocol::Ctcc5gcmp,
    control_center => CarrierProtocol::ControlCenter,
    one_nce => CarrierProtocol::OneNce,
    emnify => CarrierProtocol::Emnify,
}
