//! The emnify adapter against the in-process simulator (`docs/carriers/emnify.md`). Each test's
//! name says which part of emnify's documentation it follows.

use chrono::{Datelike, Duration as ChronoDuration, NaiveDate, TimeZone, Utc};
use domain::{
    CarrierAccount, CarrierId, CarrierLimits, CarrierPackage, CarrierProtocol, Credentials,
    NetworkStatus, PackageStatus, RealNameStatus, SystemClock,
};
use gateway::carriers::{AdapterContext, build_adapter, units};
use gateway::{AnswerFault, CallKind, CarrierGateway, GatewayError, RetryPolicy};
use gateway_sim::{
    Malformed, Script, ScriptStep, SimAccount, SimAccountPatch, SimCardPatch, SimCardSpec,
    SimHandle, SimOptions, SimServer,
};
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
const WRONG_TOKEN: &str = "wrong-emnify-application-token-7f3a";

async fn sim() -> SimHandle {
    SimServer::start(SimOptions::default())
        .await
        .expect("sim starts")
}

fn account(sim: &SimHandle, credentials: Credentials) -> CarrierAccount {
    CarrierAccount {
        carrier_id: C,
        name: "emnify".into(),
        protocol: P,
        base_url: sim.url_of(P),
        credentials,
        limits: CarrierLimits {
            timeout_ms: 2_000,
            ..P.default_limits()
        },
        enabled: true,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

fn default_credentials() -> Credentials {
    SimAccount::default_for(P)
        .credentials
        .into_iter()
        .fold(Credentials::new(), |c, (k, v)| c.with(k, v))
}

fn ctx() -> AdapterContext {
    let mut ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, Arc::new(SystemClock));
    ctx.retry = RetryPolicy {
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
        ..RetryPolicy::default()
    };
    ctx
}

fn adapter(sim: &SimHandle) -> Arc<dyn CarrierGateway> {
    build_adapter(&account(sim, default_credentials()), &ctx()).expect("adapter builds")
}

fn card(iccid: &str, total: Decimal, growth: Decimal) -> SimCardSpec {
    SimCardSpec {
        month_total_mb: total,
        growth_mb_per_query: Some(growth),
        ..SimCardSpec::new(iccid)
    }
}

fn this_month() -> NaiveDate {
    units::month_of(Utc::now(), chrono_tz::Asia::Shanghai)
}

fn set_script(sim: &SimHandle, call: CallKind, steps: Vec<ScriptStep>) {
    sim.state().set_script(Script {
        fail_next: steps,
        call: Some(call),
    });
}

fn unintelligible(e: &GatewayError) -> Option<AnswerFault> {
    match e {
        GatewayError::Unintelligible { kind, .. } => Some(*kind),
        _ => None,
    }
}

#[tokio::test]
async fn emnify_sim_stats_current_month_volume_is_month_to_date_mb_exactly() {
    let sim = sim().await;
    let kb = dec!(0.0009765625); // 1 KB, not a round MB
    sim.state()
        .upsert_cards(vec![
            card(A, dec!(100.5), Decimal::ZERO),
            card(B, kb, kb),
            card("89883030000000000309", Decimal::ZERO, Decimal::ZERO),
        ])
        .unwrap();
    let gw = adapter(&sim);

    // Growth 0: the same figure twice.
    for _ in 0..2 {
        let u = gw.usage(C, A).await.unwrap();
        assert_eq!(u.month, this_month());
        assert_eq!(u.month_total_mb, dec!(100.5));
    }
    // 1 KB a query: 2 KB, then 3 KB, exactly.
    assert_eq!(
        gw.usage(C, B).await.unwrap().month_total_mb,
        dec!(0.001953125)
    );
    assert_eq!(
        gw.usage(C, B).await.unwrap().month_total_mb,
        dec!(0.0029296875)
    );
    // No traffic this month: emnify leaves `current_month` out; the month is ours, from 0.
    let none = gw.usage(C, "89883030000000000309").await.unwrap();
    assert_eq!(
        (none.month, none.month_total_mb),
        (this_month(), Decimal::ZERO)
    );
    assert_eq!(sim.state().card(A).unwrap().usage_queries, 2);
}

#[tokio::test]
async fn emnify_sim_stats_month_rollover_starts_the_new_month_from_zero() {
    let sim = sim().await;
    let previous = this_month() - ChronoDuration::days(1);
    sim.state()
        .upsert_cards(vec![SimCardSpec {
            month: Some(format!("{:04}-{:02}", previous.year(), previous.month())),
            ..card(A, dec!(4096), dec!(1.5))
        }])
        .unwrap();
    let u = adapter(&sim).usage(C, A).await.unwrap();
    assert_eq!(u.month, this_month());
    assert_eq!(u.month_total_mb, dec!(1.5));
}

#[tokio::test]
async fn emnify_sim_list_filter_finds_both_iccid_forms_and_realname_is_verified_without_kyc() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![
            SimCardSpec {
                real_name_status: RealNameStatus::NotVerified,
                ..SimCardSpec::new(A)
            },
            SimCardSpec::new(B),
        ])
        .unwrap();
    let gw = adapter(&sim);
    // emnify has no real-name check: a SIM it knows is Verified, whatever the fleet says.
    assert_eq!(gw.realname(C, A).await, Ok(RealNameStatus::Verified));
    assert_eq!(gw.realname(C, B).await, Ok(RealNameStatus::Verified));
    // A real-name change on the carrier side has no emnify counterpart: still Verified.
    sim.state()
        .patch_card(
            B,
            SimCardPatch {
                real_name_status: Some(RealNameStatus::NotVerified),
                ..SimCardPatch::default()
            },
        )
        .unwrap();
    assert_eq!(gw.realname(C, B).await, Ok(RealNameStatus::Verified));
    assert_eq!(gw.network_status(C, A).await, Ok(NetworkStatus::Online));
    assert_eq!(gw.batch_size(C), 1, "emnify has no batch call we use");
}

#[tokio::test]
async fn emnify_sim_by_id_patch_status_suspends_then_activates() {
    let sim = sim().await;
    sim.state().upsert_cards(vec![SimCardSpec::new(A)]).unwrap();
    let gw = adapter(&sim);
    assert_eq!(gw.stop(C, A).await, Ok(NetworkStatus::Stopped));
    assert_eq!(
        sim.state().card(A).unwrap().network_status,
        NetworkStatus::Stopped
    );
    assert_eq!(gw.network_status(C, A).await, Ok(NetworkStatus::Stopped));
    assert_eq!(gw.start(C, A).await, Ok(NetworkStatus::Online));
    assert_eq!(gw.network_status(C, A).await, Ok(NetworkStatus::Online));
    let v = sim.state().card(A).unwrap();
    assert_eq!(
        (
            v.stop_calls,
            v.stops_applied,
            v.start_calls,
            v.starts_applied
        ),
        (1, 1, 1, 1)
    );
}

#[tokio::test]
async fn emnify_sim_by_id_patch_is_retried_after_503s() {
    let sim = sim().await;
    sim.state().upsert_cards(vec![SimCardSpec::new(A)]).unwrap();
    let gw = adapter(&sim);
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
    let sim = sim().await;
    let expires = Utc.with_ymd_and_hms(2030, 1, 31, 0, 0, 0).unwrap();
    let active = CarrierPackage {
        external_id: "P-1".into(),
        status: PackageStatus::Active,
        used_mb: dec!(12.5),
        limit_mb: Some(dec!(1024)),
        activated_at: None,
        expires_at: Some(expires),
    };
    let expired = CarrierPackage {
        external_id: "P-0".into(),
        status: PackageStatus::Expired,
        used_mb: dec!(100),
        limit_mb: Some(dec!(500)),
        activated_at: None,
        expires_at: Some(expires),
    };
    sim.state()
        .upsert_cards(vec![
            SimCardSpec {
                packages: vec![expired.clone(), active.clone()],
                ..SimCardSpec::new(A)
            },
            SimCardSpec {
                packages: vec![expired.clone()],
                ..SimCardSpec::new(B)
            },
            SimCardSpec::new("89883030000000000309"),
        ])
        .unwrap();
    let gw = adapter(&sim);
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
    assert_eq!(gw.packages(C, "89883030000000000309").await, Ok(vec![]));
}

#[tokio::test]
async fn emnify_no_batch_call_cards_are_asked_one_by_one_in_order() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![
            card(A, dec!(1), Decimal::ZERO),
            card(B, dec!(2), Decimal::ZERO),
        ])
        .unwrap();
    let gw = adapter(&sim);
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
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, dec!(5), Decimal::ZERO)])
        .unwrap();
    let gw = adapter(&sim);
    set_script(
        &sim,
        CallKind::Usage,
        vec![ScriptStep::Malformed(Malformed::DropLast)],
    );
    let e = gw.usage(C, A).await.unwrap_err();
    assert_eq!(unintelligible(&e), Some(AnswerFault::MissingField), "{e:?}");
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(5));
}

#[tokio::test]
async fn emnify_html_maintenance_page_is_not_json() {
    let sim = sim().await;
    sim.state().upsert_cards(vec![SimCardSpec::new(A)]).unwrap();
    let gw = adapter(&sim);
    set_script(
        &sim,
        CallKind::Usage,
        vec![ScriptStep::Malformed(Malformed::Html)],
    );
    let e = gw.usage(C, A).await.unwrap_err();
    assert_eq!(unintelligible(&e), Some(AnswerFault::NotJson), "{e:?}");
    set_script(
        &sim,
        CallKind::Stop,
        vec![ScriptStep::Malformed(Malformed::Html)],
    );
    let e = gw.stop(C, A).await.unwrap_err();
    assert_eq!(unintelligible(&e), Some(AnswerFault::NotJson), "{e:?}");
}

#[tokio::test]
async fn emnify_answers_naming_another_sim_are_wrong_iccid() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, dec!(8), Decimal::ZERO)])
        .unwrap();
    let gw = adapter(&sim);
    // Hold a token first: the script must hit the calls, not the authentication.
    gw.probe(C).await.unwrap();
    // The list filter answers another SIM.
    set_script(
        &sim,
        CallKind::Realname,
        vec![ScriptStep::Malformed(Malformed::WrongIccid)],
    );
    let e = gw.realname(C, A).await.unwrap_err();
    assert_eq!(unintelligible(&e), Some(AnswerFault::WrongIccid), "{e:?}");
    // The SIM by id answers another ICCID (the id is now known).
    assert_eq!(gw.realname(C, A).await, Ok(RealNameStatus::Verified));
    set_script(
        &sim,
        CallKind::Realname,
        vec![ScriptStep::Malformed(Malformed::WrongIccid)],
    );
    let e = gw.network_status(C, A).await.unwrap_err();
    assert_eq!(unintelligible(&e), Some(AnswerFault::WrongIccid), "{e:?}");
    // The statistics name another SIM id.
    set_script(
        &sim,
        CallKind::Usage,
        vec![ScriptStep::Malformed(Malformed::WrongIccid)],
    );
    let e = gw.usage(C, A).await.unwrap_err();
    assert_eq!(unintelligible(&e), Some(AnswerFault::WrongIccid), "{e:?}");
}

#[tokio::test]
async fn emnify_sim_status_outside_the_table_is_unknown_status() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![SimCardSpec {
            packages: vec![CarrierPackage {
                external_id: "P".into(),
                status: PackageStatus::Active,
                used_mb: dec!(1),
                limit_mb: Some(dec!(10)),
                activated_at: None,
                expires_at: None,
            }],
            ..SimCardSpec::new(A)
        }])
        .unwrap();
    let gw = adapter(&sim);
    gw.probe(C).await.unwrap();
    set_script(
        &sim,
        CallKind::Realname,
        vec![ScriptStep::Malformed(Malformed::UnknownStatus)],
    );
    let e = gw.network_status(C, A).await.unwrap_err();
    assert_eq!(
        unintelligible(&e),
        Some(AnswerFault::UnknownStatus),
        "{e:?}"
    );
    set_script(
        &sim,
        CallKind::Packages,
        vec![ScriptStep::Malformed(Malformed::UnknownStatus)],
    );
    let e = gw.packages(C, A).await.unwrap_err();
    assert_eq!(
        unintelligible(&e),
        Some(AnswerFault::UnknownStatus),
        "{e:?}"
    );
}

#[tokio::test]
async fn emnify_authenticate_refusing_the_application_token_is_auth() {
    let sim = sim().await;
    sim.state().upsert_cards(vec![SimCardSpec::new(A)]).unwrap();
    let creds = Credentials::new().with("application_token", WRONG_TOKEN);
    let gw = build_adapter(&account(&sim, creds), &ctx()).unwrap();
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
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, dec!(3), Decimal::ZERO)])
        .unwrap();
    let gw = adapter(&sim);
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(3));
    assert!(sim.state().expire_tokens(P) >= 1);
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(3));
    assert_eq!(gw.stop(C, A).await, Ok(NetworkStatus::Stopped));
    // A token the platform calls invalid once (a scripted 401): renewed once, then answered.
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(401)]);
    assert_eq!(gw.usage(C, A).await.unwrap().month_total_mb, dec!(3));
    // Refused twice in a row: the credentials are the problem.
    set_script(
        &sim,
        CallKind::Usage,
        vec![ScriptStep::Status(401), ScriptStep::Status(401)],
    );
    let e = gw.usage(C, A).await.unwrap_err();
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
}

#[tokio::test]
async fn emnify_jwt_lifetime_follows_its_exp_claim() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, dec!(3), Decimal::ZERO)])
        .unwrap();
    // Tokens living 1 s: the adapter renews from `exp` before using a lapsed one.
    sim.state().set_account(
        P,
        SimAccountPatch {
            token_ttl_secs: Some(1),
            ..SimAccountPatch::default()
        },
    );
    let gw = adapter(&sim);
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
    let sim = sim().await;
    sim.state().upsert_cards(vec![SimCardSpec::new(A)]).unwrap();
    let gw = adapter(&sim);
    gw.usage(C, A).await.unwrap();
    // The platform's own limit (10 req/s on the stats path, lowered here to 1).
    sim.state().set_account(
        P,
        SimAccountPatch {
            rate_limit_per_sec: Some(1),
            ..SimAccountPatch::default()
        },
    );
    let mut throttled = None;
    for _ in 0..5 {
        if let Err(e) = gw.usage(C, A).await {
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
    sim.state().set_account(
        P,
        SimAccountPatch {
            rate_limit_per_sec: Some(0),
            ..SimAccountPatch::default()
        },
    );
    // A scripted 429 carries the simulator's Retry-After.
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(429)]);
    let e = gw.usage(C, A).await.unwrap_err();
    assert!(
        matches!(
            e,
            GatewayError::Throttled {
                retry_after: Some(_)
            }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn emnify_5xx_is_a_carrier_error() {
    let sim = sim().await;
    sim.state().upsert_cards(vec![SimCardSpec::new(A)]).unwrap();
    let gw = adapter(&sim);
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
    let gw = adapter(&sim);
    let nope = "89883030000000009999";
    assert_eq!(gw.realname(C, nope).await, Err(GatewayError::NotFound));
    assert_eq!(gw.usage(C, nope).await, Err(GatewayError::NotFound));
    assert_eq!(gw.packages(C, nope).await, Err(GatewayError::NotFound));
    assert_eq!(gw.stop(C, nope).await, Err(GatewayError::NotFound));
    assert_eq!(gw.start(C, "123").await, Err(GatewayError::NotFound));
}

#[tokio::test]
async fn emnify_probe_authenticates_and_reads_the_sim_status_table() {
    let sim = sim().await;
    assert_eq!(adapter(&sim).probe(C).await, Ok(()));
}

#[tokio::test]
async fn emnify_no_error_shows_a_credential_or_a_token() {
    let sim = sim().await;
    sim.state()
        .upsert_cards(vec![card(A, dec!(8), Decimal::ZERO)])
        .unwrap();
    let good = SimAccount::default_for(P).credentials["application_token"].clone();
    let mut errors = Vec::new();
    let bad = build_adapter(
        &account(
            &sim,
            Credentials::new().with("application_token", WRONG_TOKEN),
        ),
        &ctx(),
    )
    .unwrap();
    errors.push(bad.usage(C, A).await.unwrap_err());
    errors.push(bad.probe(C).await.unwrap_err());
    let gw = adapter(&sim);
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
        for text in [e.to_string(), format!("{e:?}")] {
            assert!(!text.contains(WRONG_TOKEN), "{text}");
            assert!(!text.contains(&good), "{text}");
            // A JWT's header starts `eyJ`.
            assert!(!text.contains("eyJ"), "{text}");
        }
    }
}
