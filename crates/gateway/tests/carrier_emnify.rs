//! The emnify adapter against the in-process simulator (`docs/carriers/emnify.md`). Each test's
//! name says which part of emnify's documentation it follows.

mod common;

use chrono::{Datelike, Duration as ChronoDuration, TimeZone, Utc};
use common::carriers::{
    Call, account, adapter, assert_a_scripted_429_is_throttled, assert_fault, assert_faults,
    assert_no_secret, assert_not_found, assert_one_stop_one_start, assert_stop_then_start,
    assert_the_platform_limit_throttles, assert_two_401s_are_auth, assert_usage_this_month, ctx,
    default_credentials, malformed_next, set_realname, set_script, this_month, with_cards_and,
};
use common::{register, sim};
use domain::{
    CarrierId, CarrierPackage, CarrierProtocol, Credentials, NetworkStatus, PackageStatus,
    RealNameStatus,
};
use gateway::{AnswerFault, CallKind, CarrierGateway, GatewayError};
use gateway_sim::{Malformed, ScriptStep, SimAccount, SimAccountPatch, SimCardSpec, SimHandle};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use std::sync::Arc;
use std::time::Duration;

const P: CarrierProtocol = CarrierProtocol::Emnify;
const C: CarrierId = CarrierId(7);
/// A 20-digit ICCID (looked up as `iccid_with_luhn`).
const A: &str = "89883030000000000101";
/// A 19-digit ICCID (emnify's `iccid`, without the Luhn digit).
const B: &str = "8988303000000000020";
/// A card without traffic or quota.
const QUIET: &str = "89883030000000000309";
const WRONG_TOKEN: &str = "wrong-emnify-application-token-7f3a";

/// The adapter of carrier `C` on the simulator's emnify with `credentials`, a 2 s timeout.
fn adapter_with(sim: &SimHandle, credentials: Credentials) -> Arc<dyn CarrierGateway> {
    adapter(&account(sim, P, C, credentials, 2_000), &ctx())
}

/// The adapter with the simulator's credentials.
fn emnify(sim: &SimHandle) -> Arc<dyn CarrierGateway> {
    adapter_with(sim, default_credentials(P))
}

/// The adapter with an application token the platform refuses.
fn refused(sim: &SimHandle) -> Arc<dyn CarrierGateway> {
    adapter_with(
        sim,
        Credentials::new().with("application_token", WRONG_TOKEN),
    )
}

/// A simulator with `cards`, and the adapter.
async fn with_cards(cards: Vec<SimCardSpec>) -> (SimHandle, Arc<dyn CarrierGateway>) {
    with_cards_and(cards, emnify).await
}

fn card(iccid: &str, total: Decimal, growth: Decimal) -> SimCardSpec {
    SimCardSpec {
        month_total_mb: total,
        growth_mb_per_query: Some(growth),
        ..SimCardSpec::new(iccid)
    }
}

fn package(
    id: &str,
    status: PackageStatus,
    used: Decimal,
    limit: Decimal,
    expires: Option<chrono::DateTime<Utc>>,
) -> CarrierPackage {
    CarrierPackage {
        external_id: id.into(),
        status,
        used_mb: used,
        limit_mb: Some(limit),
        activated_at: None,
        expires_at: expires,
    }
}

#[tokio::test]
async fn emnify_sim_stats_current_month_volume_is_month_to_date_mb_exactly() {
    let kb = dec!(0.0009765625); // 1 KB, not a round MB
    let (sim, gw) = with_cards(vec![
        card(A, dec!(100.5), Decimal::ZERO),
        card(B, kb, kb),
        card(QUIET, Decimal::ZERO, Decimal::ZERO),
    ])
    .await;

    // Growth 0: the same figure twice.
    for _ in 0..2 {
        assert_usage_this_month(&*gw, C, A, dec!(100.5)).await;
    }
    // 1 KB a query: 2 KB, then 3 KB, exactly.
    for want in [dec!(0.001953125), dec!(0.0029296875)] {
        assert_eq!(gw.usage(C, B).await.unwrap().month_total_mb, want);
    }
    // No traffic this month: emnify leaves `current_month` out; the month is ours, from 0.
    let none = gw.usage(C, QUIET).await.unwrap();
    assert_eq!(
        (none.month, none.month_total_mb),
        (this_month(), Decimal::ZERO)
    );
    assert_eq!(sim.state().card(A).unwrap().usage_queries, 2);
}

#[tokio::test]
async fn emnify_sim_stats_month_rollover_starts_the_new_month_from_zero() {
    let previous = this_month() - ChronoDuration::days(1);
    let (_sim, gw) = with_cards(vec![SimCardSpec {
        month: Some(format!("{:04}-{:02}", previous.year(), previous.month())),
        ..card(A, dec!(4096), dec!(1.5))
    }])
    .await;
    assert_usage_this_month(&*gw, C, A, dec!(1.5)).await;
}

#[tokio::test]
async fn emnify_sim_list_filter_finds_both_iccid_forms_and_realname_is_verified_without_kyc() {
    let (sim, gw) = with_cards(vec![
        SimCardSpec {
            real_name_status: RealNameStatus::NotVerified,
            ..SimCardSpec::new(A)
        },
        SimCardSpec::new(B),
    ])
    .await;
    // emnify has no real-name check: a SIM it knows is Verified, whatever the fleet says.
    assert_eq!(gw.realname(C, A).await, Ok(RealNameStatus::Verified));
    assert_eq!(gw.realname(C, B).await, Ok(RealNameStatus::Verified));
    // A real-name change on the carrier side has no emnify counterpart: still Verified.
    set_realname(&sim, B, RealNameStatus::NotVerified);
    assert_eq!(gw.realname(C, B).await, Ok(RealNameStatus::Verified));
    assert_eq!(gw.network_status(C, A).await, Ok(NetworkStatus::Online));
    assert_eq!(gw.batch_size(C), 1, "emnify has no batch call we use");
}

#[tokio::test]
async fn emnify_sim_by_id_patch_status_suspends_then_activates() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    assert_stop_then_start(&sim, &*gw, C, A).await;
    assert_eq!(gw.network_status(C, A).await, Ok(NetworkStatus::Online));
    assert_one_stop_one_start(&sim, A);
}

#[tokio::test]
async fn emnify_sim_by_id_patch_is_retried_after_503s() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    set_script(
        &sim,
        CallKind::Stop,
        vec![ScriptStep::Status(503), ScriptStep::Status(503)],
    );
    assert_eq!(gw.stop(C, A).await, Ok(NetworkStatus::Stopped));
    let v = sim.state().card(A).unwrap();
    assert_eq!((v.stop_calls, v.stops_applied), (3, 1));
}

#[tokio::test]
async fn emnify_endpoint_quota_data_is_the_one_package() {
    let expires = Utc.with_ymd_and_hms(2030, 1, 31, 0, 0, 0).unwrap();
    let active = package(
        "P-1",
        PackageStatus::Active,
        dec!(12.5),
        dec!(1024),
        Some(expires),
    );
    let expired = package(
        "P-0",
        PackageStatus::Expired,
        dec!(100),
        dec!(500),
        Some(expires),
    );
    let (_sim, gw) = with_cards(vec![
        SimCardSpec {
            packages: vec![expired.clone(), active.clone()],
            ..SimCardSpec::new(A)
        },
        SimCardSpec {
            packages: vec![expired.clone()],
            ..SimCardSpec::new(B)
        },
        SimCardSpec::new(QUIET),
    ])
    .await;
    let got = gw.packages(C, A).await.unwrap();
    assert_eq!(got.len(), 1);
    let p = &got[0];
    assert!(
        p.external_id.starts_with("data-quota:"),
        "{}",
        p.external_id
    );
    assert_eq!(
        (
            p.status,
            p.used_mb,
            p.limit_mb,
            p.expires_at,
            p.activated_at
        ),
        (
            PackageStatus::Active,
            dec!(12.5),
            Some(dec!(1024)),
            Some(expires),
            None
        )
    );
    let got = gw.packages(C, B).await.unwrap();
    assert_eq!(
        (got[0].status, got[0].used_mb, got[0].limit_mb),
        (PackageStatus::Expired, dec!(100), Some(dec!(500)))
    );
    // No quota set: no package.
    assert_eq!(gw.packages(C, QUIET).await, Ok(vec![]));
}

#[tokio::test]
async fn emnify_no_batch_call_cards_are_asked_one_by_one_in_order() {
    let (_sim, gw) = with_cards(vec![
        card(A, dec!(1), Decimal::ZERO),
        card(B, dec!(2), Decimal::ZERO),
    ])
    .await;
    let asked = vec![
        B.to_owned(),
        "89000000000000000000".to_owned(),
        A.to_owned(),
    ];
    let got = gw.usage_batch(C, &asked).await.unwrap();
    assert_eq!(got[0].as_ref().unwrap().month_total_mb, dec!(2));
    assert_eq!(got[1], Err(GatewayError::NotFound));
    assert_eq!(got[2].as_ref().unwrap().month_total_mb, dec!(1));
}

#[tokio::test]
async fn emnify_sim_stats_without_any_period_is_not_read_as_zero() {
    // DropLast on a single-card call: an empty statistics object. Since a month without traffic
    // also lacks `current_month`, an answer without even `last_hour` must not become 0 MB.
    let (sim, gw) = with_cards(vec![card(A, dec!(5), Decimal::ZERO)]).await;
    malformed_next(&sim, CallKind::Usage, Malformed::DropLast);
    assert_fault(
        &gw.usage(C, A).await.unwrap_err(),
        AnswerFault::MissingField,
    );
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(5));
}

#[tokio::test]
async fn emnify_html_maintenance_page_is_not_json() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    let html = ScriptStep::Malformed(Malformed::Html);
    let calls = [(CallKind::Usage, Call::Usage), (CallKind::Stop, Call::Stop)];
    assert_faults(&sim, &*gw, (C, A), html, &calls, AnswerFault::NotJson).await;
}

#[tokio::test]
async fn emnify_answers_naming_another_sim_are_wrong_iccid() {
    let (sim, gw) = with_cards(vec![card(A, dec!(8), Decimal::ZERO)]).await;
    // Hold a token first: the script must hit the calls, not the authentication.
    gw.probe(C).await.unwrap();
    let wrong = ScriptStep::Malformed(Malformed::WrongIccid);
    let fault = AnswerFault::WrongIccid;
    // The list filter answers another SIM.
    let calls = [(CallKind::Realname, Call::Realname)];
    assert_faults(&sim, &*gw, (C, A), wrong, &calls, fault).await;
    // The SIM by id answers another ICCID (the id is now known), then the statistics name
    // another SIM id.
    assert_eq!(gw.realname(C, A).await, Ok(RealNameStatus::Verified));
    let calls = [
        (CallKind::Realname, Call::NetworkStatus),
        (CallKind::Usage, Call::Usage),
    ];
    assert_faults(&sim, &*gw, (C, A), wrong, &calls, fault).await;
}

#[tokio::test]
async fn emnify_sim_status_outside_the_table_is_unknown_status() {
    let (sim, gw) = with_cards(vec![SimCardSpec {
        packages: vec![package("P", PackageStatus::Active, dec!(1), dec!(10), None)],
        ..SimCardSpec::new(A)
    }])
    .await;
    gw.probe(C).await.unwrap();
    let unknown = ScriptStep::Malformed(Malformed::UnknownStatus);
    let calls = [
        (CallKind::Realname, Call::NetworkStatus),
        (CallKind::Packages, Call::Packages),
    ];
    assert_faults(
        &sim,
        &*gw,
        (C, A),
        unknown,
        &calls,
        AnswerFault::UnknownStatus,
    )
    .await;
}

#[tokio::test]
async fn emnify_authenticate_refusing_the_application_token_is_auth() {
    let sim = sim().await;
    register(&sim, &[A]);
    let gw = refused(&sim);
    let before = sim.state().stats().requests;
    let e = gw.usage(C, A).await.unwrap_err();
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
    assert_eq!(
        sim.state().stats().requests - before,
        1,
        "one refused authentication, no second try"
    );
    let e = gw.probe(C).await.unwrap_err();
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
    let e = gw.stop(C, A).await.unwrap_err();
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
    assert!(!e.is_retryable());
    assert_eq!(sim.state().card(A).unwrap().stops_applied, 0);
}

#[tokio::test]
async fn emnify_jwt_expired_mid_run_is_renewed_transparently() {
    let (sim, gw) = with_cards(vec![card(A, dec!(3), Decimal::ZERO)]).await;
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(3));
    assert!(sim.state().expire_tokens(P) >= 1);
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(3));
    assert_eq!(gw.stop(C, A).await, Ok(NetworkStatus::Stopped));
    // A token the platform calls invalid once (a scripted 401): renewed once, then answered.
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(401)]);
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(3));
    // Refused twice in a row: the credentials are the problem.
    assert_two_401s_are_auth(&sim, &*gw, C, A).await;
}

#[tokio::test]
async fn emnify_jwt_lifetime_follows_its_exp_claim() {
    let (sim, gw) = with_cards(vec![card(A, dec!(3), Decimal::ZERO)]).await;
    // Tokens living 1 s: the adapter renews from `exp` before using a lapsed one.
    sim.state().set_account(
        P,
        SimAccountPatch {
            token_ttl_secs: Some(1),
            ..SimAccountPatch::default()
        },
    );
    gw.usage(C, A).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let before = sim.state().stats().by_outcome.get("bad_request").copied();
    gw.usage(C, A).await.unwrap();
    assert_eq!(
        sim.state().stats().by_outcome.get("bad_request").copied(),
        before,
        "no request went out with the lapsed token"
    );
}

#[tokio::test]
async fn emnify_rate_limits_answer_429_which_is_throttled() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    gw.usage(C, A).await.unwrap();
    // The platform's own limit (10 req/s on the stats path, lowered here to 1).
    assert_the_platform_limit_throttles(&sim, &*gw, (P, C), Call::Usage, A).await;
    // A scripted 429 carries the simulator's Retry-After.
    assert_a_scripted_429_is_throttled(&sim, &*gw, C, A).await;
}

#[tokio::test]
async fn emnify_5xx_is_a_carrier_error() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(500)]);
    let e = gw.usage(C, A).await.unwrap_err();
    assert!(
        matches!(e, GatewayError::Carrier { status: 500, .. }),
        "{e:?}"
    );
    assert!(e.is_retryable());
    set_script(&sim, CallKind::Packages, vec![ScriptStep::Status(503)]);
    let e = gw.packages(C, A).await.unwrap_err();
    assert!(
        matches!(e, GatewayError::Carrier { status: 503, .. }),
        "{e:?}"
    );
}

#[tokio::test]
async fn emnify_unknown_sim_is_not_found() {
    let sim = sim().await;
    let gw = emnify(&sim);
    let nope = "89883030000000009999";
    let calls = [Call::Realname, Call::Usage, Call::Packages, Call::Stop];
    assert_not_found(&*gw, C, nope, &calls).await;
    assert_not_found(&*gw, C, "123", &[Call::Start]).await;
}

#[tokio::test]
async fn emnify_probe_authenticates_and_reads_the_sim_status_table() {
    let sim = sim().await;
    assert_eq!(emnify(&sim).probe(C).await, Ok(()));
}

#[tokio::test]
async fn emnify_no_error_shows_a_credential_or_a_token() {
    let (sim, gw) = with_cards(vec![card(A, dec!(8), Decimal::ZERO)]).await;
    let good = SimAccount::default_for(P).credentials["application_token"].clone();
    let bad = refused(&sim);
    let mut errors = vec![
        bad.usage(C, A).await.unwrap_err(),
        bad.probe(C).await.unwrap_err(),
    ];
    for step in [
        ScriptStep::Status(401),
        ScriptStep::Status(500),
        ScriptStep::Status(429),
        ScriptStep::Status(422),
        ScriptStep::Malformed(Malformed::Html),
        ScriptStep::Malformed(Malformed::WrongIccid),
    ] {
        set_script(&sim, CallKind::Usage, vec![step, step]);
        if let Err(e) = gw.usage(C, A).await {
            errors.push(e);
        }
    }
    assert!(errors.len() >= 8, "{errors:?}");
    for e in &errors {
        // A JWT's header starts `eyJ`.
        assert_no_secret(e, &[WRONG_TOKEN, &good, "eyJ"]);
    }
}
