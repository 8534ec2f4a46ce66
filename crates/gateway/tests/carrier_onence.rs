//! The 1NCE adapter against the simulator's 1NCE Management API, in-process on port 0. Each
//! test names the part of 1NCE's documentation it follows ("Authorization", "General SIMs",
//! "SIM Usage", "API Rate Limits"); `docs/carriers/1nce.md` is the adapter's page.

mod common;

use chrono::{Duration as Days, TimeZone, Utc};
use common::carriers::{
    Call, account, adapter, assert_fault, assert_faults, assert_no_secret, assert_not_found,
    assert_one_stop_one_start, assert_stop_then_start, assert_two_401s_are_auth,
    assert_usage_this_month, card, ctx, default_credentials, malformed_next, rate_limit, requests,
    set_realname, set_script, this_month, unintelligible, with_cards_and,
};
use common::sim;
use domain::{
    CarrierId, CarrierPackage, CarrierProtocol, Credentials, NetworkStatus, PackageStatus,
    RealNameStatus,
};
use gateway::{AnswerFault, CallKind, CarrierGateway, GatewayError};
use gateway_sim::{
    FaultsPatch, Hang, Malformed, ScriptStep, SimAccountPatch, SimCardPatch, SimCardSpec, SimHandle,
};
use rust_decimal_macros::dec;
use std::sync::Arc;
use std::time::Duration;

const P: CarrierProtocol = CarrierProtocol::OneNce;
const C: CarrierId = CarrierId(11);
const A: &str = "8988228066600000001";
const B: &str = "8988228066600000002";

/// The adapter of carrier `C` on the simulator's 1NCE with `credentials` and `timeout_ms`.
fn adapter_of(
    sim: &SimHandle,
    credentials: Credentials,
    timeout_ms: u32,
) -> Arc<dyn CarrierGateway> {
    adapter(&account(sim, P, C, credentials, timeout_ms), &ctx())
}

/// The adapter with `credentials`, a 2 s timeout.
fn adapter_with(sim: &SimHandle, credentials: Credentials) -> Arc<dyn CarrierGateway> {
    adapter_of(sim, credentials, 2_000)
}

/// The adapter with the simulator's credentials, a 2 s timeout.
fn default_adapter(sim: &SimHandle) -> Arc<dyn CarrierGateway> {
    adapter_with(sim, default_credentials(P))
}

/// A simulator with `cards`, and the adapter.
async fn with_cards(cards: Vec<SimCardSpec>) -> (SimHandle, Arc<dyn CarrierGateway>) {
    with_cards_and(cards, default_adapter).await
}

// ---------------------------------------------------------------------------------------------
// Authorization: POST /oauth/token

#[tokio::test]
async fn authorization_oauth_token_is_fetched_once_and_reused() {
    let (sim, gw) = with_cards(vec![card(A, dec!(1))]).await;
    for _ in 0..3 {
        gw.usage(C, A).await.unwrap();
    }
    // One token request (counted as realname), three usage requests.
    assert_eq!(requests(&sim, CallKind::Realname), 1);
    assert_eq!(requests(&sim, CallKind::Usage), 3);
}

#[tokio::test]
async fn authorization_token_expired_mid_run_is_renewed_transparently() {
    let (sim, gw) = with_cards(vec![card(A, dec!(7.5))]).await;
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(7.5));
    assert_eq!(sim.state().expire_tokens(P), 1);
    // The 401 is answered inside the call: a new token, the request once more.
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(7.5));
    assert_eq!(requests(&sim, CallKind::Realname), 2, "two token requests");
    assert_eq!(
        requests(&sim, CallKind::Usage),
        3,
        "one usage request repeated"
    );
    // And the renewed token serves the next calls.
    gw.usage(C, A).await.unwrap();
    assert_eq!(requests(&sim, CallKind::Realname), 2);
}

#[tokio::test]
async fn authorization_token_refused_after_one_renewal_is_auth() {
    let (sim, gw) = with_cards(vec![card(A, dec!(1))]).await;
    assert_two_401s_are_auth(&sim, &*gw, C, A).await;
    // One renewal, not a loop.
    assert_eq!(requests(&sim, CallKind::Realname), 2);
    assert_eq!(requests(&sim, CallKind::Usage), 2);
}

#[tokio::test]
async fn authorization_bad_credentials_are_auth_after_one_token_request() {
    let sim = sim().await;
    sim.state().upsert_cards(vec![card(A, dec!(1))]).unwrap();
    let wrong_secret = "sim-1nce-WRONG-secret-4711";
    let gw = adapter_with(
        &sim,
        Credentials::new()
            .with("client_id", "sim-1nce-client")
            .with("client_secret", wrong_secret),
    );
    let err = gw.usage(C, A).await.unwrap_err();
    assert!(matches!(err, GatewayError::Auth(_)), "{err:?}");
    assert!(!err.is_retryable());
    assert_eq!(requests(&sim, CallKind::Realname), 1, "one token request");
    assert_eq!(
        requests(&sim, CallKind::Usage),
        0,
        "no SIM request without a token"
    );
    assert_no_secret(&err, &[wrong_secret]);

    let unknown_user = adapter_with(
        &sim,
        Credentials::new()
            .with("client_id", "someone-else")
            .with("client_secret", "sim-1nce-secret"),
    );
    let err = unknown_user.probe(C).await.unwrap_err();
    assert!(matches!(err, GatewayError::Auth(_)), "{err:?}");
    assert_no_secret(&err, &["sim-1nce-secret", "someone-else"]);
}

#[tokio::test]
async fn authorization_probe_is_one_authenticated_page_of_the_sim_list() {
    let (sim, gw) = with_cards(vec![card(A, dec!(1))]).await;
    gw.probe(C).await.unwrap();
    assert_eq!(
        requests(&sim, CallKind::Realname),
        2,
        "the token and one page"
    );
}

// ---------------------------------------------------------------------------------------------
// SIM Usage: GET /v1/sims/{iccid}/usage (daily records, MB)

#[tokio::test]
async fn sim_usage_daily_mb_volumes_sum_exactly_to_the_month() {
    // 1 KB is 0.0009765625 MB: not a round figure, kept exactly.
    let (sim, gw) = with_cards(vec![card(A, dec!(100.5)), card(B, dec!(0.0009765625))]).await;
    assert_usage_this_month(&*gw, C, A, dec!(100.5)).await;
    // Growth 0: the same figure again.
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(100.5));
    assert_eq!(
        gw.usage(C, B).await.unwrap().month_total_mb,
        dec!(0.0009765625)
    );

    // With growth, each answer adds it, to the last digit.
    sim.state()
        .patch_card(
            A,
            SimCardPatch {
                growth_mb_per_query: Some(dec!(0.125)),
                ..SimCardPatch::default()
            },
        )
        .unwrap();
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(100.625));
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(100.750));
}

#[tokio::test]
async fn sim_usage_month_rollover_starts_the_new_month_from_zero() {
    let last_month = (this_month() - Days::days(1)).format("%Y-%m").to_string();
    let (_sim, gw) = with_cards(vec![SimCardSpec {
        month: Some(last_month),
        ..card(A, dec!(512.25))
    }])
    .await;
    assert_usage_this_month(&*gw, C, A, dec!(0)).await;
}

#[tokio::test]
async fn sim_usage_html_page_is_unintelligible_not_json() {
    let (sim, gw) = with_cards(vec![card(A, dec!(3))]).await;
    gw.usage(C, A).await.unwrap();
    malformed_next(&sim, CallKind::Usage, Malformed::Html);
    let err = gw.usage(C, A).await.unwrap_err();
    assert_fault(&err, AnswerFault::NotJson);
    assert!(!err.is_retryable());
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(3));
}

#[tokio::test]
async fn sim_usage_an_empty_answer_is_a_missing_field_never_zero() {
    let (sim, gw) = with_cards(vec![card(A, dec!(42))]).await;
    malformed_next(&sim, CallKind::Usage, Malformed::DropLast);
    let err = gw.usage(C, A).await.unwrap_err();
    assert_fault(&err, AnswerFault::MissingField);
}

#[tokio::test]
async fn sim_usage_unknown_card_is_not_found() {
    let sim = sim().await;
    let gw = default_adapter(&sim);
    let calls = [
        Call::Usage,
        Call::Packages,
        Call::Realname,
        Call::NetworkStatus,
        Call::Stop,
    ];
    assert_not_found(&*gw, C, A, &calls).await;
}

// ---------------------------------------------------------------------------------------------
// SIM Usage: GET /v1/sims/{iccid}/quota/data

/// "No data quota found" for a SIM the platform knows is no package, not an unknown card (the
/// demo's cards without packages failed every package poll as unknown).
#[tokio::test]
async fn sim_usage_data_quota_absent_is_no_package_for_a_known_sim() {
    let (_sim, gw) = with_cards(vec![card(A, dec!(0))]).await;
    assert_eq!(gw.packages(C, A).await, Ok(Vec::new()));
    assert_eq!(gw.packages(C, B).await.unwrap_err(), GatewayError::NotFound);
}

#[tokio::test]
async fn sim_usage_data_quota_is_the_one_package() {
    let expires = Utc.with_ymd_and_hms(2036, 1, 1, 0, 0, 0).unwrap();
    let active = CarrierPackage {
        external_id: "P-1".into(),
        status: PackageStatus::Active,
        used_mb: dec!(64.2),
        limit_mb: Some(dec!(500)),
        activated_at: Some(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()),
        expires_at: Some(expires),
    };
    let lapsed = CarrierPackage {
        used_mb: dec!(10),
        expires_at: Some(Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap()),
        ..active.clone()
    };
    let (sim, gw) = with_cards(vec![
        SimCardSpec {
            packages: vec![active],
            ..SimCardSpec::new(A)
        },
        SimCardSpec {
            packages: vec![lapsed],
            ..SimCardSpec::new(B)
        },
    ])
    .await;
    assert_eq!(
        gw.packages(C, A).await.unwrap(),
        vec![CarrierPackage {
            external_id: "data-quota".into(),
            status: PackageStatus::Active,
            used_mb: dec!(64.2),
            limit_mb: Some(dec!(500)),
            activated_at: None,
            expires_at: Some(expires),
        }]
    );
    let b = gw.packages(C, B).await.unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].status, PackageStatus::Expired);
    assert_eq!(b[0].used_mb, dec!(10));

    malformed_next(&sim, CallKind::Packages, Malformed::Html);
    let err = gw.packages(C, A).await.unwrap_err();
    assert_fault(&err, AnswerFault::NotJson);
}

// ---------------------------------------------------------------------------------------------
// General SIMs: GET /v1/sims/{iccid}, PUT /v1/sims/{iccid}

#[tokio::test]
async fn general_sims_realname_is_verified_for_every_known_sim() {
    let (sim, gw) = with_cards(vec![SimCardSpec {
        real_name_status: RealNameStatus::NotVerified,
        ..SimCardSpec::new(A)
    }])
    .await;
    // 1NCE has no KYC status: the sim's flag has no 1NCE field and changes nothing.
    assert_eq!(gw.realname(C, A).await.unwrap(), RealNameStatus::Verified);
    set_realname(&sim, A, RealNameStatus::Verified);
    assert_eq!(gw.realname(C, A).await.unwrap(), RealNameStatus::Verified);
}

#[tokio::test]
async fn general_sims_put_status_disabled_then_enabled() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    assert_eq!(
        gw.network_status(C, A).await.unwrap(),
        NetworkStatus::Online
    );
    assert_stop_then_start(&sim, &*gw, C, A).await;
    assert_eq!(
        gw.network_status(C, A).await.unwrap(),
        NetworkStatus::Online
    );
    assert_one_stop_one_start(&sim, A);
}

#[tokio::test]
async fn general_sims_put_is_retried_on_5xx_and_never_on_html() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    gw.probe(C).await.unwrap();
    set_script(
        &sim,
        CallKind::Stop,
        vec![ScriptStep::Status(503), ScriptStep::Status(502)],
    );
    assert_eq!(gw.stop(C, A).await.unwrap(), NetworkStatus::Stopped);
    let v = sim.state().card(A).unwrap();
    assert_eq!((v.stop_calls, v.stops_applied), (3, 1));

    // A proxy's page with HTTP 200 is not an acceptance: the card stays as it was.
    malformed_next(&sim, CallKind::Start, Malformed::Html);
    let err = gw.start(C, A).await.unwrap_err();
    assert_fault(&err, AnswerFault::NotJson);
    let v = sim.state().card(A).unwrap();
    assert_eq!((v.start_calls, v.starts_applied), (1, 0));
    assert_eq!(v.network_status, NetworkStatus::Stopped);
}

#[tokio::test]
async fn general_sims_answer_for_another_iccid_is_refused() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    gw.probe(C).await.unwrap();
    let wrong = ScriptStep::Malformed(Malformed::WrongIccid);
    let calls = [
        (CallKind::Realname, Call::NetworkStatus),
        (CallKind::Realname, Call::Realname),
    ];
    assert_faults(&sim, &*gw, (C, A), wrong, &calls, AnswerFault::WrongIccid).await;
}

#[tokio::test]
async fn general_sims_status_outside_enabled_disabled_is_unknown_status() {
    let (sim, gw) = with_cards(vec![SimCardSpec::new(A)]).await;
    gw.probe(C).await.unwrap();
    malformed_next(&sim, CallKind::Realname, Malformed::UnknownStatus);
    let err = gw.network_status(C, A).await.unwrap_err();
    assert_fault(&err, AnswerFault::UnknownStatus);
    assert_eq!(
        gw.network_status(C, A).await.unwrap(),
        NetworkStatus::Online
    );
}

#[tokio::test]
async fn general_sims_no_batch_call_each_card_answers_for_itself() {
    let (sim, gw) = with_cards(vec![card(A, dec!(1.5)), card(B, dec!(2.5))]).await;
    // The SIM list filters by IMEI and IP address only: no call answers chosen cards.
    assert_eq!(gw.batch_size(C), 1);
    gw.probe(C).await.unwrap();
    let unknown = "8988228066600000099".to_owned();
    malformed_next(&sim, CallKind::Usage, Malformed::DropLast);
    let got = gw
        .usage_batch(C, &[A.to_owned(), unknown.clone(), B.to_owned()])
        .await
        .unwrap();
    assert_eq!(got.len(), 3);
    // The emptied answer hits the first card alone; the others are right, in order.
    assert_eq!(
        got[0].as_ref().err().and_then(unintelligible),
        Some(AnswerFault::MissingField)
    );
    assert_eq!(got[1], Err(GatewayError::NotFound));
    assert_eq!(got[2].as_ref().unwrap().month_total_mb, dec!(2.5));

    let statuses = gw
        .network_status_batch(C, &[B.to_owned(), unknown, A.to_owned()])
        .await
        .unwrap();
    assert_eq!(
        statuses,
        vec![
            Ok(NetworkStatus::Online),
            Err(GatewayError::NotFound),
            Ok(NetworkStatus::Online)
        ]
    );
}

#[tokio::test]
async fn general_sims_page_size_over_100_is_refused_by_the_platform() {
    let sim = sim().await;
    let http = reqwest::Client::new();
    let token: serde_json::Value = http
        .post(format!("{}/oauth/token", sim.url_of(P)))
        .basic_auth("sim-1nce-client", Some("sim-1nce-secret"))
        .json(&serde_json::json!({"grant_type": "client_credentials"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(token["token_type"], "bearer");
    assert_eq!(token["expires_in"], 3600);
    let bearer = token["access_token"].as_str().unwrap().to_owned();
    let page = |size: u32| {
        http.get(format!("{}/v1/sims?page=1&pageSize={size}", sim.url_of(P)))
            .bearer_auth(&bearer)
            .send()
    };
    assert_eq!(page(100).await.unwrap().status(), 200);
    let over = page(101).await.unwrap();
    assert_eq!(over.status(), 400);
    let body: serde_json::Value = over.json().await.unwrap();
    assert_eq!(body["error_token"], "BadRequest");
    // No token, no answer.
    let anonymous = http
        .get(format!("{}/v1/sims", sim.url_of(P)))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}

// ---------------------------------------------------------------------------------------------
// API Rate Limits: /sims 10 requests per second per customer; errors

#[tokio::test]
async fn api_rate_limits_sims_over_10_per_second_is_throttled() {
    let (sim, gw) = with_cards(vec![card(A, dec!(1))]).await;
    rate_limit(&sim, P, 10);
    let calls = (0..30).map(|_| gw.usage(C, A));
    let results = futures::future::join_all(calls).await;
    let throttled = results
        .iter()
        .filter(|r| matches!(r, Err(GatewayError::Throttled { .. })))
        .count();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    // 31 requests (the token too) within a second or two: at most 20 pass.
    assert!(throttled >= 10, "throttled {throttled}, ok {ok}");
    assert_eq!(throttled + ok, 30, "{results:?}");

    // A scripted 429 carries Retry-After.
    rate_limit(&sim, P, 0);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(429)]);
    assert_eq!(
        gw.usage(C, A).await.unwrap_err(),
        GatewayError::Throttled {
            retry_after: Some(Duration::from_secs(1))
        }
    );
}

#[tokio::test]
async fn api_errors_5xx_is_carrier_and_a_hang_is_timeout() {
    let sim = sim().await;
    sim.state().upsert_cards(vec![card(A, dec!(1))]).unwrap();
    let gw = adapter_of(&sim, default_credentials(P), 500);
    gw.probe(C).await.unwrap();
    set_script(
        &sim,
        CallKind::Usage,
        vec![ScriptStep::Status(500), ScriptStep::Status(503)],
    );
    for status in [500, 503] {
        match gw.usage(C, A).await.unwrap_err() {
            GatewayError::Carrier { status: s, body } => {
                assert_eq!(s, status);
                assert!(body.contains("error_token"), "{body}");
            }
            e => panic!("{e:?}"),
        }
    }
    sim.state()
        .set_faults(FaultsPatch {
            hang_ms: Some(1_500),
            ..FaultsPatch::default()
        })
        .unwrap();
    set_script(&sim, CallKind::Packages, vec![ScriptStep::Hang(Hang::Hang)]);
    assert_eq!(gw.packages(C, A).await.unwrap_err(), GatewayError::Timeout);
}

#[tokio::test]
async fn no_error_shows_a_credential_or_a_token() {
    let (sim, gw) = with_cards(vec![card(A, dec!(1))]).await;
    let mut errors = Vec::new();
    set_script(
        &sim,
        CallKind::Usage,
        vec![
            ScriptStep::Status(401),
            ScriptStep::Status(401),
            ScriptStep::Malformed(Malformed::Html),
            ScriptStep::Status(500),
        ],
    );
    for _ in 0..3 {
        errors.push(gw.usage(C, A).await.unwrap_err());
    }
    sim.state().expire_tokens(P);
    sim.state().set_account(
        P,
        SimAccountPatch {
            credentials: Some(
                [("client_id", "other"), ("client_secret", "other")]
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
            ),
            ..SimAccountPatch::default()
        },
    );
    errors.push(gw.usage(C, A).await.unwrap_err());
    assert!(matches!(errors.last(), Some(GatewayError::Auth(_))));
    for e in &errors {
        assert_no_secret(
            e,
            &["sim-1nce-client", "sim-1nce-secret", "Bearer ", "Basic "],
        );
    }
}
