//! The China Telecom 5GCMP adapter against the simulator's 5GCMP platform, in-process on port 0.
//! Test names cite the section of the platform's document (or of `docs/carriers/ctcc-5gcmp.md`)
//! they follow.

mod common;

use chrono::{Datelike, Months, TimeZone, Utc};
use common::carriers::*;
use domain::{
    CarrierId, CarrierPackage, CarrierProtocol, Credentials, NetworkStatus, PackageStatus,
    RealNameStatus,
};
use gateway::{AnswerFault, CallKind, CarrierGateway, GatewayError};
use gateway_sim::{Malformed, ScriptStep, SimAccountPatch, SimCardSpec, SimHandle};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use std::sync::Arc;

const P: CarrierProtocol = CarrierProtocol::Ctcc5gcmp;
const C: CarrierId = CarrierId(7);
const A: &str = "89860321000000000001";
const B: &str = "89860321000000000002";
const D: &str = "89860321000000000003";

/// The adapter of the simulated platform's account signing with `creds`.
fn ctcc_with(sim: &SimHandle, creds: Credentials) -> Arc<dyn CarrierGateway> {
    let timeout_ms = P.default_limits().timeout_ms;
    adapter(&account(sim, P, C, creds, timeout_ms), &ctx())
}

/// The simulator with `cards` and the adapter with the account's own credentials.
async fn setup(cards: Vec<SimCardSpec>) -> (SimHandle, Arc<dyn CarrierGateway>) {
    with_cards_and(cards, |sim| ctcc_with(sim, default_credentials(P))).await
}

/// An adapter whose credentials are `app_key` and `secret`.
fn signing_as(sim: &SimHandle, app_key: &str, secret: &str) -> Arc<dyn CarrierGateway> {
    ctcc_with(
        sim,
        Credentials::new()
            .with("app_key", app_key)
            .with("secret", secret),
    )
}

fn set_account(sim: &SimHandle, patch: SimAccountPatch) {
    sim.state().set_account(P, patch);
}

#[tokio::test]
async fn bq019_batch_realname_status_follows_the_card_and_its_change() {
    let mut b = card(B, Decimal::ZERO);
    b.real_name_status = RealNameStatus::NotVerified;
    let (sim, gw) = setup(vec![card(A, Decimal::ZERO), b]).await;

    let got = gw.realname_batch(C, &iccids(&[A, B])).await.unwrap();
    assert_eq!(
        got,
        vec![
            Ok(RealNameStatus::Verified),
            Ok(RealNameStatus::NotVerified)
        ]
    );

    set_realname(&sim, B, RealNameStatus::Verified);
    assert_eq!(gw.realname(C, B).await.unwrap(), RealNameStatus::Verified);
}

#[tokio::test]
async fn batch_qry_flow_by_month_usage_is_exact_and_grows_only_by_the_cards_growth() {
    // 1025 KB: not a round number of MB, stays exact.
    let fixed = card(A, dec!(1.0009765625));
    let growing = SimCardSpec {
        growth_mb_per_query: Some(dec!(0.25)),
        ..card(B, dec!(100.5))
    };
    let (sim, gw) = setup(vec![fixed, growing]).await;

    let first = gw.usage_batch(C, &iccids(&[A, B])).await.unwrap();
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
    let last = this_month().checked_sub_months(Months::new(1)).unwrap();
    let spec = SimCardSpec {
        month: Some(format!("{:04}-{:02}", last.year(), last.month())),
        ..card(A, dec!(777.77))
    };
    let (_sim, gw) = setup(vec![spec]).await;

    assert_usage_this_month(&*gw, C, A, Decimal::ZERO).await;
}

#[tokio::test]
async fn qry_prod_inst_info_lists_the_cards_packages() {
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
    let (_sim, gw) = setup(vec![spec]).await;

    assert_eq!(gw.packages(C, A).await.unwrap(), vec![active, queued]);
}

#[tokio::test]
async fn lc002_stop_then_resume_answers_the_status_after_each() {
    let (sim, gw) = setup(vec![card(A, Decimal::ZERO)]).await;

    assert_stop_then_start(&sim, &*gw, C, A).await;
    assert_eq!(
        gw.network_status_batch(C, &iccids(&[A])).await.unwrap(),
        vec![Ok(NetworkStatus::Online)]
    );
    assert_one_stop_one_start(&sim, A);
}

#[tokio::test]
async fn lc002_a_503_stop_is_retried_and_applied_once() {
    let (sim, gw) = setup(vec![card(A, Decimal::ZERO)]).await;
    set_script(&sim, CallKind::Stop, vec![ScriptStep::Status(503)]);
    assert_eq!(gw.stop(C, A).await.unwrap(), NetworkStatus::Stopped);
    let v = sim.state().card(A).unwrap();
    assert_eq!((v.stop_calls, v.stops_applied), (2, 1));
}

#[tokio::test]
async fn batch_answer_without_its_last_card_leaves_that_card_missing() {
    let (sim, gw) = setup(vec![card(A, dec!(1)), card(B, dec!(2)), card(D, dec!(3))]).await;
    let drop_last = ScriptStep::Malformed(Malformed::DropLast);

    set_script(&sim, CallKind::Realname, vec![drop_last]);
    let got = gw.realname_batch(C, &iccids(&[A, B, D])).await.unwrap();
    assert_eq!(got[0], Ok(RealNameStatus::Verified));
    assert_eq!(got[1], Ok(RealNameStatus::Verified));
    assert_eq!(got[2], Err(GatewayError::MissingFromBatch));

    set_script(&sim, CallKind::Usage, vec![drop_last]);
    let got = gw.usage_batch(C, &iccids(&[A, B, D])).await.unwrap();
    assert_eq!(got[0].as_ref().unwrap().month_total_mb, dec!(1));
    assert_eq!(got[1].as_ref().unwrap().month_total_mb, dec!(2));
    assert_eq!(got[2], Err(GatewayError::MissingFromBatch));
}

#[tokio::test]
async fn an_html_maintenance_page_is_not_json() {
    let (sim, gw) = setup(vec![card(A, Decimal::ZERO)]).await;
    let calls = [
        (CallKind::Usage, Call::Usage),
        (CallKind::Packages, Call::Packages),
        (CallKind::Stop, Call::Stop),
    ];
    let html = ScriptStep::Malformed(Malformed::Html);
    assert_faults(&sim, &*gw, (C, A), html, &calls, AnswerFault::NotJson).await;
    // The page came from a proxy: the stop never reached the platform.
    assert_eq!(
        sim.state().card(A).unwrap().network_status,
        NetworkStatus::Online
    );
}

#[tokio::test]
async fn an_answer_naming_another_card_is_never_attributed() {
    let (sim, gw) = setup(vec![card(A, dec!(1)), card(B, dec!(2))]).await;
    let wrong = ScriptStep::Malformed(Malformed::WrongIccid);

    let realname = [(CallKind::Realname, Call::Realname)];
    assert_faults(
        &sim,
        &*gw,
        (C, A),
        wrong,
        &realname,
        AnswerFault::WrongIccid,
    )
    .await;

    // In a batch the renamed item (the first) is ignored: that card is missing, the other right.
    set_script(&sim, CallKind::Usage, vec![wrong]);
    let got = gw.usage_batch(C, &iccids(&[A, B])).await.unwrap();
    assert_eq!(got[0], Err(GatewayError::MissingFromBatch));
    assert_eq!(got[1].as_ref().unwrap().month_total_mb, dec!(2));

    let calls = [
        (CallKind::Packages, Call::Packages),
        (CallKind::Stop, Call::Stop),
    ];
    assert_faults(&sim, &*gw, (C, A), wrong, &calls, AnswerFault::WrongIccid).await;
}

#[tokio::test]
async fn a_status_outside_the_documented_tables_is_unknown_status() {
    let (sim, gw) = setup(vec![SimCardSpec {
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
    .await;
    let calls = [
        (CallKind::Realname, Call::Realname),
        (CallKind::Realname, Call::NetworkStatus),
        (CallKind::Usage, Call::Usage),
        (CallKind::Packages, Call::Packages),
    ];
    let malformed = ScriptStep::Malformed(Malformed::UnknownStatus);
    assert_faults(
        &sim,
        &*gw,
        (C, A),
        malformed,
        &calls,
        AnswerFault::UnknownStatus,
    )
    .await;
}

#[tokio::test]
async fn gateway_signature_a_wrong_secret_is_auth_and_decides_nothing() {
    let (sim, _) = setup(vec![card(A, Decimal::ZERO)]).await;
    let gw = signing_as(&sim, "sim-ctcc-app-key", "not-the-secret");
    assert!(matches!(
        gw.realname(C, A).await,
        Err(GatewayError::Auth(_))
    ));
    assert!(matches!(
        gw.usage_batch(C, &iccids(&[A])).await,
        Err(GatewayError::Auth(_))
    ));
    assert!(matches!(gw.probe(C).await, Err(GatewayError::Auth(_))));
    // One stop request, refused, not retried, not applied.
    assert!(matches!(gw.stop(C, A).await, Err(GatewayError::Auth(_))));
    let v = sim.state().card(A).unwrap();
    assert_eq!((v.stop_calls, v.stops_applied), (1, 0));
    assert_eq!(v.network_status, NetworkStatus::Online);

    let unknown_key = signing_as(&sim, "someone-else", "sim-ctcc-secret");
    assert!(matches!(
        unknown_key.realname(C, A).await,
        Err(GatewayError::Auth(_))
    ));
}

#[tokio::test]
async fn gateway_signature_every_request_is_signed_so_token_expiry_changes_nothing() {
    let (sim, gw) = setup(vec![card(A, Decimal::ZERO)]).await;
    gw.probe(C).await.unwrap();
    assert_eq!(gw.realname(C, A).await.unwrap(), RealNameStatus::Verified);
    // The platform issues no token: nothing to expire, the next call is signed afresh.
    assert_eq!(sim.state().expire_tokens(P), 0);
    assert_eq!(gw.realname(C, A).await.unwrap(), RealNameStatus::Verified);
}

#[tokio::test]
async fn gateway_rate_limit_answers_429_which_is_throttled() {
    let (sim, gw) = setup(vec![card(A, Decimal::ZERO)]).await;
    assert_the_platform_limit_throttles(&sim, &*gw, (P, C), Call::Realname, A).await;
    // A scripted 429 carries the injected Retry-After.
    assert_a_scripted_429_is_throttled(&sim, &*gw, C, A).await;
}

#[tokio::test]
async fn gateway_5xx_is_a_carrier_error() {
    let (sim, gw) = setup(vec![card(A, Decimal::ZERO)]).await;
    set_script(&sim, CallKind::Realname, vec![ScriptStep::Status(503)]);
    assert!(matches!(
        gw.realname(C, A).await,
        Err(GatewayError::Carrier { status: 503, .. })
    ));
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(500)]);
    assert!(matches!(
        gw.usage_batch(C, &iccids(&[A])).await,
        Err(GatewayError::Carrier { status: 500, .. })
    ));
}

#[tokio::test]
async fn an_unknown_card_is_not_found_in_every_call() {
    let (_sim, gw) = setup(vec![card(A, Decimal::ZERO)]).await;
    let nobody = "89860321999999999999";
    let calls = [
        Call::Realname,
        Call::Usage,
        Call::NetworkStatus,
        Call::Packages,
        Call::Stop,
        Call::Start,
    ];
    assert_not_found(&*gw, C, nobody, &calls).await;
    let got = gw.realname_batch(C, &iccids(&[nobody, A])).await.unwrap();
    assert_eq!(
        got,
        vec![Err(GatewayError::NotFound), Ok(RealNameStatus::Verified)]
    );
}

#[tokio::test]
async fn batch_limit_of_100_numbers_more_cards_are_split_into_calls() {
    let cards: Vec<String> = (0..150)
        .map(|i| format!("8986032100000001{i:04}"))
        .collect();
    let (_sim, gw) = setup(cards.iter().map(|c| card(c, dec!(0.5))).collect()).await;
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
    let (sim, gw) = setup(vec![card(A, dec!(1)), card(B, dec!(1)), card(D, dec!(1))]).await;
    set_account(
        &sim,
        SimAccountPatch {
            batch_limit: Some(2),
            ..Default::default()
        },
    );
    assert!(matches!(
        gw.realname_batch(C, &iccids(&[A, B, D])).await,
        Err(GatewayError::Carrier { .. })
    ));
}

#[tokio::test]
async fn no_error_shows_a_credential() {
    let (sim, good) = setup(vec![card(A, Decimal::ZERO)]).await;
    let secret = "a-wrong-secret-value";
    let key = "sim-ctcc-app-key";
    let wrong = signing_as(&sim, key, secret);
    set_script(&sim, CallKind::Realname, vec![ScriptStep::Status(503)]);
    let mut errors: Vec<GatewayError> = vec![
        good.realname(C, A).await.unwrap_err(),
        wrong.realname(C, A).await.unwrap_err(),
        wrong.stop(C, A).await.unwrap_err(),
        wrong.packages(C, A).await.unwrap_err(),
        wrong.probe(C).await.unwrap_err(),
    ];
    set_script(
        &sim,
        CallKind::Usage,
        vec![ScriptStep::Malformed(Malformed::Html)],
    );
    errors.push(good.usage(C, A).await.unwrap_err());
    for e in errors {
        assert_no_secret(&e, &[secret, "sim-ctcc-secret", key]);
    }
}
