//! The China Telecom 5GCMP adapter against the simulator's 5GCMP platform, in-process on port 0.
//! Test names cite the section of the platform's document (or of `docs/carriers/ctcc-5gcmp.md`)
//! they follow.

use chrono::{Datelike, Months, NaiveDate, TimeZone, Utc};
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, CarrierProtocol, Credentials, NetworkStatus,
    PackageStatus, RealNameStatus, SystemClock,
};
use gateway::carriers::{AdapterContext, build_adapter};
use gateway::{AnswerFault, CallKind, CarrierGateway, GatewayError};
use gateway_sim::{
    Malformed, Script, ScriptStep, SimAccount, SimAccountPatch, SimCardPatch, SimCardSpec,
    SimHandle, SimOptions, SimServer,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const P: CarrierProtocol = CarrierProtocol::Ctcc5gcmp;
const C: CarrierId = CarrierId(7);
const A: &str = "89860321000000000001";
const B: &str = "89860321000000000002";
const D: &str = "89860321000000000003";

async fn sim() -> SimHandle {
    SimServer::start(SimOptions::default())
        .await
        .expect("the simulator starts")
}

fn credentials(map: &BTreeMap<String, String>) -> Credentials {
    map.iter()
        .fold(Credentials::new(), |c, (k, v)| c.with(k.clone(), v.clone()))
}

fn adapter_with(sim: &SimHandle, creds: Credentials) -> Arc<dyn CarrierGateway> {
    let account = CarrierAccount {
        carrier_id: C,
        name: "China Telecom".into(),
        protocol: P,
        base_url: sim.url_of(P),
        credentials: creds,
        limits: P.default_limits(),
        enabled: true,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    };
    let ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, Arc::new(SystemClock));
    build_adapter(&account, &ctx).expect("the adapter builds")
}

fn adapter(sim: &SimHandle) -> Arc<dyn CarrierGateway> {
    adapter_with(sim, credentials(&SimAccount::default_for(P).credentials))
}

fn card(iccid: &str, total: Decimal) -> SimCardSpec {
    SimCardSpec {
        month_total_mb: total,
        ..SimCardSpec::new(iccid)
    }
}

fn script(call: CallKind, step: ScriptStep) -> Script {
    Script {
        fail_next: vec![step],
        call: Some(call),
    }
}

fn this_month() -> NaiveDate {
    let now = Utc::now().with_timezone(&chrono_tz::Asia::Shanghai);
    NaiveDate::from_ymd_opt(now.year(), now.month(), 1).expect("a month's first day")
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn fault_kind<T: std::fmt::Debug>(r: Result<T, GatewayError>) -> AnswerFault {
    match r {
        Err(GatewayError::Unintelligible { kind, .. }) => kind,
        other => panic!("expected an unintelligible answer, got {other:?}"),
    }
}

#[tokio::test]
async fn bq019_batch_realname_status_follows_the_card_and_its_change() {
    let sim = sim().await;
    let mut b = card(B, Decimal::ZERO);
    b.real_name_status = RealNameStatus::NotVerified;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO), b])
        .unwrap();
    let gw = adapter(&sim);

    let got = gw.realname_batch(C, &ids(&[A, B])).await.unwrap();
    assert_eq!(
        got,
        vec![
            Ok(RealNameStatus::Verified),
            Ok(RealNameStatus::NotVerified)
        ]
    );

    sim.state()
        .patch_card(
            B,
            SimCardPatch {
                real_name_status: Some(RealNameStatus::Verified),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(gw.realname(C, B).await.unwrap(), RealNameStatus::Verified);
}

#[tokio::test]
async fn batch_qry_flow_by_month_usage_is_exact_and_grows_only_by_the_cards_growth() {
    let sim = sim().await;
    // 1025 KB: not a round number of MB, stays exact.
    let fixed = card(A, dec!(1.0009765625));
    let growing = SimCardSpec {
        growth_mb_per_query: Some(dec!(0.25)),
        ..card(B, dec!(100.5))
    };
    sim.state().upsert_cards(vec![fixed, growing]).unwrap();
    let gw = adapter(&sim);

    let first = gw.usage_batch(C, &ids(&[A, B])).await.unwrap();
    let month = this_month();
    assert_eq!(first[0].as_ref().unwrap().month, month);
    assert_eq!(
        first[0].as_ref().unwrap().month_total_mb,
        dec!(1.0009765625)
    );
    assert_eq!(first[1].as_ref().unwrap().month_total_mb, dec!(100.75));

    let again = gw.usage(C, A).await.unwrap();
    assert_eq!(again.month_total_mb, dec!(1.0009765625));
    assert_eq!(gw.usage(C, B).await.unwrap().month_total_mb, dec!(101.00));
    assert_eq!(sim.state().card(B).unwrap().usage_queries, 2);
}

#[tokio::test]
async fn batch_qry_flow_by_month_a_new_month_starts_from_zero() {
    let sim = sim().await;
    let last = this_month().checked_sub_months(Months::new(1)).unwrap();
    let spec = SimCardSpec {
        month: Some(format!("{:04}-{:02}", last.year(), last.month())),
        ..card(A, dec!(777.77))
    };
    sim.state().upsert_cards(vec![spec]).unwrap();
    let gw = adapter(&sim);

    let u = gw.usage(C, A).await.unwrap();
    assert_eq!(u.month, this_month());
    assert_eq!(u.month_total_mb, Decimal::ZERO);
}

#[tokio::test]
async fn qry_prod_inst_info_lists_the_cards_packages() {
    let sim = sim().await;
    let active = CarrierPackage {
        external_id: "OFFER-1".into(),
        status: PackageStatus::Active,
        used_mb: dec!(12.5),
        limit_mb: Some(dec!(1024)),
        activated_at: Some(Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap()),
        expires_at: Some(Utc.with_ymd_and_hms(2026, 3, 31, 15, 59, 59).unwrap()),
    };
    let queued = CarrierPackage {
        external_id: "OFFER-2".into(),
        status: PackageStatus::Pending,
        used_mb: Decimal::ZERO,
        limit_mb: None,
        activated_at: None,
        expires_at: None,
    };
    let spec = SimCardSpec {
        packages: vec![active.clone(), queued.clone()],
        ..card(A, Decimal::ZERO)
    };
    sim.state().upsert_cards(vec![spec]).unwrap();
    let gw = adapter(&sim);

    assert_eq!(gw.packages(C, A).await.unwrap(), vec![active, queued]);
}

#[tokio::test]
async fn lc002_stop_then_resume_answers_the_status_after_each() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    let gw = adapter(&sim);

    assert_eq!(gw.stop(C, A).await.unwrap(), NetworkStatus::Stopped);
    assert_eq!(
        sim.state().card(A).unwrap().network_status,
        NetworkStatus::Stopped
    );
    assert_eq!(
        gw.network_status(C, A).await.unwrap(),
        NetworkStatus::Stopped
    );
    assert_eq!(gw.start(C, A).await.unwrap(), NetworkStatus::Online);
    assert_eq!(
        gw.network_status_batch(C, &ids(&[A])).await.unwrap(),
        vec![Ok(NetworkStatus::Online)]
    );
    let v = sim.state().card(A).unwrap();
    assert_eq!(
        (
            v.stop_calls,
            v.start_calls,
            v.stops_applied,
            v.starts_applied
        ),
        (1, 1, 1, 1)
    );
}

#[tokio::test]
async fn lc002_a_503_stop_is_retried_and_applied_once() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    sim.state()
        .set_script(script(CallKind::Stop, ScriptStep::Status(503)));
    let gw = adapter(&sim);
    assert_eq!(gw.stop(C, A).await.unwrap(), NetworkStatus::Stopped);
    let v = sim.state().card(A).unwrap();
    assert_eq!((v.stop_calls, v.stops_applied), (2, 1));
}

#[tokio::test]
async fn batch_answer_without_its_last_card_leaves_that_card_missing() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, dec!(1)), card(B, dec!(2)), card(D, dec!(3))])
        .unwrap();
    let gw = adapter(&sim);

    sim.state().set_script(script(
        CallKind::Realname,
        ScriptStep::Malformed(Malformed::DropLast),
    ));
    let got = gw.realname_batch(C, &ids(&[A, B, D])).await.unwrap();
    assert_eq!(got[0], Ok(RealNameStatus::Verified));
    assert_eq!(got[1], Ok(RealNameStatus::Verified));
    assert_eq!(got[2], Err(GatewayError::MissingFromBatch));

    sim.state().set_script(script(
        CallKind::Usage,
        ScriptStep::Malformed(Malformed::DropLast),
    ));
    let got = gw.usage_batch(C, &ids(&[A, B, D])).await.unwrap();
    assert_eq!(got[0].as_ref().unwrap().month_total_mb, dec!(1));
    assert_eq!(got[1].as_ref().unwrap().month_total_mb, dec!(2));
    assert_eq!(got[2], Err(GatewayError::MissingFromBatch));
}

#[tokio::test]
async fn an_html_maintenance_page_is_not_json() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    let gw = adapter(&sim);
    for call in [CallKind::Usage, CallKind::Packages, CallKind::Stop] {
        sim.state()
            .set_script(script(call, ScriptStep::Malformed(Malformed::Html)));
        let kind = match call {
            CallKind::Usage => fault_kind(gw.usage(C, A).await),
            CallKind::Packages => fault_kind(gw.packages(C, A).await),
            _ => fault_kind(gw.stop(C, A).await),
        };
        assert_eq!(kind, AnswerFault::NotJson, "{call}");
    }
    // The page came from a proxy: the stop never reached the platform.
    assert_eq!(
        sim.state().card(A).unwrap().network_status,
        NetworkStatus::Online
    );
}

#[tokio::test]
async fn an_answer_naming_another_card_is_never_attributed() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, dec!(1)), card(B, dec!(2))])
        .unwrap();
    let gw = adapter(&sim);

    sim.state().set_script(script(
        CallKind::Realname,
        ScriptStep::Malformed(Malformed::WrongIccid),
    ));
    assert_eq!(fault_kind(gw.realname(C, A).await), AnswerFault::WrongIccid);

    // In a batch the renamed item (the first) is ignored: that card is missing, the other right.
    sim.state().set_script(script(
        CallKind::Usage,
        ScriptStep::Malformed(Malformed::WrongIccid),
    ));
    let got = gw.usage_batch(C, &ids(&[A, B])).await.unwrap();
    assert_eq!(got[0], Err(GatewayError::MissingFromBatch));
    assert_eq!(got[1].as_ref().unwrap().month_total_mb, dec!(2));

    sim.state().set_script(script(
        CallKind::Packages,
        ScriptStep::Malformed(Malformed::WrongIccid),
    ));
    assert_eq!(fault_kind(gw.packages(C, A).await), AnswerFault::WrongIccid);

    sim.state().set_script(script(
        CallKind::Stop,
        ScriptStep::Malformed(Malformed::WrongIccid),
    ));
    assert_eq!(fault_kind(gw.stop(C, A).await), AnswerFault::WrongIccid);
}

#[tokio::test]
async fn a_status_outside_the_documented_tables_is_unknown_status() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![SimCardSpec {
            packages: vec![CarrierPackage {
                external_id: "OFFER-1".into(),
                status: PackageStatus::Active,
                used_mb: Decimal::ZERO,
                limit_mb: None,
                activated_at: None,
                expires_at: None,
            }],
            ..card(A, Decimal::ZERO)
        }])
        .unwrap();
    let gw = adapter(&sim);
    let malformed = ScriptStep::Malformed(Malformed::UnknownStatus);

    sim.state()
        .set_script(script(CallKind::Realname, malformed));
    assert_eq!(
        fault_kind(gw.realname(C, A).await),
        AnswerFault::UnknownStatus
    );
    sim.state()
        .set_script(script(CallKind::Realname, malformed));
    assert_eq!(
        fault_kind(gw.network_status(C, A).await),
        AnswerFault::UnknownStatus
    );
    sim.state().set_script(script(CallKind::Usage, malformed));
    assert_eq!(fault_kind(gw.usage(C, A).await), AnswerFault::UnknownStatus);
    sim.state()
        .set_script(script(CallKind::Packages, malformed));
    assert_eq!(
        fault_kind(gw.packages(C, A).await),
        AnswerFault::UnknownStatus
    );
}

#[tokio::test]
async fn gateway_signature_a_wrong_secret_is_auth_and_decides_nothing() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    let gw = adapter_with(
        &sim,
        Credentials::new()
            .with("app_key", "sim-ctcc-app-key")
            .with("secret", "not-the-secret"),
    );
    assert!(matches!(
        gw.realname(C, A).await,
        Err(GatewayError::Auth(_))
    ));
    assert!(matches!(
        gw.usage_batch(C, &ids(&[A])).await,
        Err(GatewayError::Auth(_))
    ));
    assert!(matches!(gw.probe(C).await, Err(GatewayError::Auth(_))));
    // One stop request, refused, not retried, not applied.
    assert!(matches!(gw.stop(C, A).await, Err(GatewayError::Auth(_))));
    let v = sim.state().card(A).unwrap();
    assert_eq!((v.stop_calls, v.stops_applied), (1, 0));
    assert_eq!(v.network_status, NetworkStatus::Online);

    let unknown_key = adapter_with(
        &sim,
        Credentials::new()
            .with("app_key", "someone-else")
            .with("secret", "sim-ctcc-secret"),
    );
    assert!(matches!(
        unknown_key.realname(C, A).await,
        Err(GatewayError::Auth(_))
    ));
}

#[tokio::test]
async fn gateway_signature_every_request_is_signed_so_token_expiry_changes_nothing() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    let gw = adapter(&sim);
    gw.probe(C).await.unwrap();
    assert_eq!(gw.realname(C, A).await.unwrap(), RealNameStatus::Verified);
    // The platform issues no token: nothing to expire, the next call is signed afresh.
    assert_eq!(sim.state().expire_tokens(P), 0);
    assert_eq!(gw.realname(C, A).await.unwrap(), RealNameStatus::Verified);
}

#[tokio::test]
async fn gateway_rate_limit_answers_429_which_is_throttled() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    sim.state().set_account(
        P,
        SimAccountPatch {
            rate_limit_per_sec: Some(1),
            ..Default::default()
        },
    );
    let gw = adapter(&sim);
    let mut throttled = None;
    for _ in 0..5 {
        if let Err(e) = gw.realname(C, A).await {
            throttled = Some(e);
            break;
        }
    }
    assert_eq!(
        throttled,
        Some(GatewayError::Throttled {
            retry_after: Some(Duration::from_secs(1))
        })
    );

    // A scripted 429 carries the injected Retry-After.
    sim.state().set_account(
        P,
        SimAccountPatch {
            rate_limit_per_sec: Some(0),
            ..Default::default()
        },
    );
    sim.state()
        .set_script(script(CallKind::Usage, ScriptStep::Status(429)));
    assert!(matches!(
        gw.usage(C, A).await,
        Err(GatewayError::Throttled {
            retry_after: Some(_)
        })
    ));
}

#[tokio::test]
async fn gateway_5xx_is_a_carrier_error() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    let gw = adapter(&sim);
    sim.state()
        .set_script(script(CallKind::Realname, ScriptStep::Status(503)));
    assert!(matches!(
        gw.realname(C, A).await,
        Err(GatewayError::Carrier { status: 503, .. })
    ));
    sim.state()
        .set_script(script(CallKind::Usage, ScriptStep::Status(500)));
    assert!(matches!(
        gw.usage_batch(C, &ids(&[A])).await,
        Err(GatewayError::Carrier { status: 500, .. })
    ));
}

#[tokio::test]
async fn an_unknown_card_is_not_found_in_every_call() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    let gw = adapter(&sim);
    let nobody = "89860321999999999999";
    assert_eq!(gw.realname(C, nobody).await, Err(GatewayError::NotFound));
    assert_eq!(gw.usage(C, nobody).await, Err(GatewayError::NotFound));
    assert_eq!(
        gw.network_status(C, nobody).await,
        Err(GatewayError::NotFound)
    );
    assert_eq!(gw.packages(C, nobody).await, Err(GatewayError::NotFound));
    assert_eq!(gw.stop(C, nobody).await, Err(GatewayError::NotFound));
    assert_eq!(gw.start(C, nobody).await, Err(GatewayError::NotFound));
    let got = gw.realname_batch(C, &ids(&[nobody, A])).await.unwrap();
    assert_eq!(
        got,
        vec![Err(GatewayError::NotFound), Ok(RealNameStatus::Verified)]
    );
}

#[tokio::test]
async fn batch_limit_of_100_numbers_more_cards_are_split_into_calls() {
    let sim = sim().await;
    let cards: Vec<String> = (0..150)
        .map(|i| format!("8986032100000001{i:04}"))
        .collect();
    sim.state()
        .upsert_cards(cards.iter().map(|c| card(c, dec!(0.5))).collect())
        .unwrap();
    let gw = adapter(&sim);
    assert_eq!(gw.batch_size(C), 100);
    let got = gw.usage_batch(C, &cards).await.unwrap();
    assert_eq!(got.len(), 150);
    assert!(
        got.iter()
            .all(|r| r.as_ref().unwrap().month_total_mb == dec!(0.5))
    );
}

#[tokio::test]
async fn batch_limit_a_call_over_the_platforms_limit_is_refused() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, dec!(1)), card(B, dec!(1)), card(D, dec!(1))])
        .unwrap();
    sim.state().set_account(
        P,
        SimAccountPatch {
            batch_limit: Some(2),
            ..Default::default()
        },
    );
    let gw = adapter(&sim);
    assert!(matches!(
        gw.realname_batch(C, &ids(&[A, B, D])).await,
        Err(GatewayError::Carrier { .. })
    ));
}

#[tokio::test]
async fn no_error_shows_a_credential() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, Decimal::ZERO)])
        .unwrap();
    let secret = "a-wrong-secret-value";
    let key = "sim-ctcc-app-key";
    let wrong = adapter_with(
        &sim,
        Credentials::new()
            .with("app_key", key)
            .with("secret", secret),
    );
    let good = adapter(&sim);
    sim.state()
        .set_script(script(CallKind::Realname, ScriptStep::Status(503)));
    let mut errors: Vec<GatewayError> = vec![
        good.realname(C, A).await.unwrap_err(),
        wrong.realname(C, A).await.unwrap_err(),
        wrong.stop(C, A).await.unwrap_err(),
        wrong.packages(C, A).await.unwrap_err(),
        wrong.probe(C).await.unwrap_err(),
    ];
    sim.state().set_script(script(
        CallKind::Usage,
        ScriptStep::Malformed(Malformed::Html),
    ));
    errors.push(good.usage(C, A).await.unwrap_err());
    for e in errors {
        for text in [e.to_string(), format!("{e:?}")] {
            assert!(!text.contains(secret), "{text}");
            assert!(!text.contains("sim-ctcc-secret"), "{text}");
            assert!(!text.contains(key), "{text}");
        }
    }
}
