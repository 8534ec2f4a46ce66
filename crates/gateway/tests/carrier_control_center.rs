//! The Control Center adapter against the simulator's Control Center, in-process on port 0.
//! Each test's name says which section of Cisco's Control Center REST documentation it follows
//! (`docs/carriers/control-center.md`).

mod common;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use common::carriers::{
    account, adapter, assert_no_secret, assert_one_stop_one_start, assert_stop_then_start,
    assert_usage_this_month, card, ctx, ctx_with, default_credentials, set_script, unintelligible,
    with_cards_and,
};
use common::{register, sim, sim_with};
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, CarrierProtocol, Clock, Credentials, ManualClock,
    NetworkStatus, PackageStatus,
};
use gateway::carriers::{ControlCenter, SEARCH_PAGE_SIZE};
use gateway::{AnswerFault, CallKind, CarrierGateway, GatewayError};
use gateway_sim::{
    FaultsPatch, Malformed, ScriptStep, SimAccount, SimAccountPatch, SimCardSpec, SimHandle,
    SimOptions,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const P: CarrierProtocol = CarrierProtocol::ControlCenter;
const C: CarrierId = CarrierId(7);

/// Carrier `C` on the simulator's Control Center with `credentials`, a 2 s timeout.
fn cc_account(sim: &SimHandle, credentials: Credentials) -> CarrierAccount {
    account(sim, P, C, credentials, 2_000)
}

/// The adapter with the simulator's default credentials.
fn default_adapter(sim: &SimHandle) -> Arc<dyn CarrierGateway> {
    adapter(&cc_account(sim, default_credentials(P)), &ctx())
}

/// The adapter with `credentials`.
fn adapter_with(sim: &SimHandle, credentials: Credentials) -> Arc<dyn CarrierGateway> {
    adapter(&cc_account(sim, credentials), &ctx())
}

/// The adapter as its own type (Search Devices is not a trait call).
fn typed_adapter(sim: &SimHandle) -> ControlCenter {
    ControlCenter::new(&cc_account(sim, default_credentials(P)), &ctx()).expect("adapter builds")
}

fn register_specs(sim: &SimHandle, specs: Vec<SimCardSpec>) {
    sim.state().upsert_cards(specs).expect("cards register");
}

const ICCID: &str = "89860112345678900001";
const SECOND: &str = "89860112345678900002";

/// A simulator with the one card `ICCID`, and the adapter.
async fn one_card() -> (SimHandle, Arc<dyn CarrierGateway>) {
    with_cards_and(vec![SimCardSpec::new(ICCID)], default_adapter).await
}

/// The adapter call the simulator counts as a request of `kind`, on `iccid`.
async fn call(
    gw: &dyn CarrierGateway,
    kind: CallKind,
    iccid: &str,
) -> Result<NetworkStatus, GatewayError> {
    match kind {
        // The month total says nothing of the network: any success reads as online.
        CallKind::Usage => gw.usage(C, iccid).await.map(|_| NetworkStatus::Online),
        CallKind::Realname => gw.network_status(C, iccid).await,
        CallKind::Stop => gw.stop(C, iccid).await,
        other => panic!("no Control Center call is counted as {other:?}"),
    }
}

/// The kind of answer fault the call of `kind` on `ICCID` reports when the next answer to it
/// is `m`.
async fn fault_of(
    sim: &SimHandle,
    gw: &dyn CarrierGateway,
    kind: CallKind,
    m: Malformed,
) -> Option<AnswerFault> {
    set_script(sim, kind, vec![ScriptStep::Malformed(m)]);
    let e = call(gw, kind, ICCID).await.expect_err("malformed");
    unintelligible(&e)
}

async fn network(gw: &dyn CarrierGateway, iccid: &str) -> NetworkStatus {
    gw.network_status(C, iccid).await.expect("status")
}

async fn month_total(gw: &dyn CarrierGateway, iccid: &str) -> Decimal {
    gw.usage(C, iccid).await.expect("usage").month_total_mb
}

fn set_limits(sim: &SimHandle, rate_limit_per_sec: Option<u64>, max_concurrent: Option<u64>) {
    sim.state().set_account(
        P,
        SimAccountPatch {
            rate_limit_per_sec,
            max_concurrent,
            ..SimAccountPatch::default()
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Get Device Usage: ctdDataUsage in bytes since the cycle start.

#[tokio::test]
async fn cc_get_device_usage_ctd_bytes_are_exact_megabytes() {
    // 1,572,865 bytes: 1.5 MB and one byte, not a round megabyte.
    let odd = dec!(1572865) / dec!(1048576);
    assert_eq!(odd, dec!(1.50000095367431640625));
    let (_sim, gw) = with_cards_and(
        vec![
            card(ICCID, odd),
            SimCardSpec {
                growth_mb_per_query: Some(dec!(0.25)),
                ..card(SECOND, dec!(100.5))
            },
        ],
        default_adapter,
    )
    .await;

    assert_usage_this_month(&*gw, C, ICCID, odd).await;
    // Growth 0: the same figure again.
    assert_eq!(month_total(&*gw, ICCID).await, odd);

    // Each answer of a growing card adds its growth, exactly.
    assert_eq!(month_total(&*gw, SECOND).await, dec!(100.75));
    assert_eq!(month_total(&*gw, SECOND).await, dec!(101.00));
}

#[tokio::test]
async fn cc_get_device_usage_a_new_billing_cycle_starts_from_zero() {
    // 2026-03-31 17:00 UTC is already April 1st in Shanghai: the sim's cycle and our month.
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 3, 31, 17, 0, 0)
            .single()
            .expect("date"),
    ));
    let sim = sim_with(SimOptions {
        clock: clock.clone(),
        ..SimOptions::default()
    })
    .await;
    register_specs(
        &sim,
        vec![SimCardSpec {
            month_total_mb: dec!(500),
            month: Some("2026-03".into()),
            ..SimCardSpec::new(ICCID)
        }],
    );
    let gw = adapter(&cc_account(&sim, default_credentials(P)), &ctx_with(clock));
    let u = gw.usage(C, ICCID).await.expect("usage");
    assert_eq!(u.month, NaiveDate::from_ymd_opt(2026, 4, 1).expect("date"));
    assert_eq!(u.month_total_mb, Decimal::ZERO);
}

// ---------------------------------------------------------------------------------------------
// Get Device Details and Edit Device Details.

#[tokio::test]
async fn cc_get_device_details_status_maps_to_network_status() {
    let (_sim, gw) = with_cards_and(
        vec![
            SimCardSpec::new(ICCID),
            SimCardSpec {
                network_status: NetworkStatus::Stopped,
                ..SimCardSpec::new(SECOND)
            },
        ],
        default_adapter,
    )
    .await;
    assert_eq!(network(&*gw, ICCID).await, NetworkStatus::Online);
    assert_eq!(network(&*gw, SECOND).await, NetworkStatus::Stopped);
}

#[tokio::test]
async fn cc_edit_device_details_stop_then_start_answer_the_status_asked() {
    let (sim, gw) = one_card().await;

    assert_stop_then_start(&sim, &*gw, C, ICCID).await;
    let view = assert_one_stop_one_start(&sim, ICCID);
    assert_eq!(view.network_status, NetworkStatus::Online);
}

#[tokio::test]
async fn cc_edit_device_details_a_503_is_retried_then_applied() {
    let (sim, gw) = one_card().await;
    set_script(&sim, CallKind::Stop, vec![ScriptStep::Status(503)]);
    assert_eq!(
        gw.stop(C, ICCID).await.expect("stop"),
        NetworkStatus::Stopped
    );
    let view = sim.state().card(ICCID).expect("card");
    assert_eq!((view.stop_calls, view.stops_applied), (2, 1));
}

// ---------------------------------------------------------------------------------------------
// Calls Control Center does not have.

#[tokio::test]
async fn cc_no_kyc_concept_realname_is_unsupported_without_a_request() {
    let (sim, gw) = one_card().await;
    assert_eq!(
        gw.realname(C, ICCID).await,
        Err(GatewayError::Unsupported("realname"))
    );
    let batch = gw
        .realname_batch(C, &[ICCID.to_owned()])
        .await
        .expect("batch");
    assert_eq!(batch, vec![Err(GatewayError::Unsupported("realname"))]);
    assert_eq!(sim.state().stats().requests, 0);
}

#[tokio::test]
async fn cc_rate_plans_carry_no_allowance_packages_are_empty_without_a_request() {
    let pkg = CarrierPackage {
        external_id: "SIM Monthly 1GB".into(),
        status: PackageStatus::Active,
        used_mb: dec!(1),
        limit_mb: Some(dec!(1024)),
        activated_at: None,
        expires_at: None,
    };
    let spec = SimCardSpec {
        packages: vec![pkg],
        ..SimCardSpec::new(ICCID)
    };
    let (sim, gw) = with_cards_and(vec![spec], default_adapter).await;
    assert_eq!(gw.packages(C, ICCID).await.expect("packages"), vec![]);
    assert_eq!(sim.state().stats().requests, 0);
}

#[tokio::test]
async fn cc_no_batch_call_batch_size_is_one_and_a_dropped_answer_fails_its_card_alone() {
    let ids: Vec<String> = (1..=3).map(|i| format!("8986011234567890000{i}")).collect();
    let cards = ids.iter().map(|i| card(i, dec!(2))).collect();
    let (sim, gw) = with_cards_and(cards, default_adapter).await;
    assert_eq!(gw.batch_size(C), 1);
    // The first card's answer comes back empty (the single-card form of a dropped card).
    set_script(
        &sim,
        CallKind::Usage,
        vec![ScriptStep::Malformed(Malformed::DropLast)],
    );
    let out = gw.usage_batch(C, &ids).await.expect("batch");
    assert_eq!(out.len(), 3);
    assert_eq!(
        out[0].as_ref().err().and_then(unintelligible),
        Some(AnswerFault::MissingField)
    );
    for r in &out[1..] {
        assert_eq!(r.as_ref().expect("usage").month_total_mb, dec!(2));
    }
}

// ---------------------------------------------------------------------------------------------
// Search Devices.

/// A simulator with `n` cards registered 5 s after the instant returned, the typed adapter
/// and the cards' ICCIDs in order.
async fn searchable(n: u32) -> (SimHandle, ControlCenter, DateTime<Utc>, Vec<String>) {
    let sim = sim().await;
    let before = Utc::now() - chrono::Duration::seconds(5);
    let ids: Vec<String> = (0..n).map(|i| format!("898601123456789{i:05}")).collect();
    register_specs(
        &sim,
        ids.iter().map(|i| SimCardSpec::new(i.clone())).collect(),
    );
    let cc = typed_adapter(&sim);
    (sim, cc, before, ids)
}

#[tokio::test]
async fn cc_search_devices_pages_of_50_modified_since() {
    let (_sim, cc, before, ids) = searchable(60).await;

    let p1 = cc.modified_since(before, 1).await.expect("page 1");
    assert_eq!(
        (p1.page_number, p1.devices.len(), p1.last_page),
        (1, SEARCH_PAGE_SIZE as usize, false)
    );
    let p2 = cc.modified_since(before, 2).await.expect("page 2");
    assert_eq!(
        (p2.page_number, p2.devices.len(), p2.last_page),
        (2, 10, true)
    );
    let mut seen: Vec<String> = p1
        .devices
        .iter()
        .chain(&p2.devices)
        .map(|d| d.iccid.clone())
        .collect();
    seen.sort();
    assert_eq!(seen, ids);
    assert!(
        p1.devices
            .iter()
            .all(|d| d.status == "ACTIVATED" && d.network == Ok(NetworkStatus::Online))
    );

    // Only what changed since: `modifiedSince` has whole seconds, so start a new one first.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let since = Utc::now();
    cc.stop(C, &ids[7]).await.expect("stop");
    let delta = cc.modified_since(since, 1).await.expect("delta");
    assert!(delta.last_page);
    assert_eq!(delta.devices.len(), 1);
    assert_eq!(delta.devices[0].iccid, ids[7]);
    assert_eq!(delta.devices[0].status, "DEACTIVATED");
    assert_eq!(delta.devices[0].network, Ok(NetworkStatus::Stopped));
}

#[tokio::test]
async fn cc_search_devices_malformed_pages_never_misattribute() {
    let (sim, cc, before, ids) = searchable(3).await;

    set_script(
        &sim,
        CallKind::Realname,
        [
            Malformed::DropLast,
            Malformed::UnknownStatus,
            Malformed::Html,
        ]
        .into_iter()
        .map(ScriptStep::Malformed)
        .collect(),
    );
    let dropped = cc.modified_since(before, 1).await.expect("page");
    assert_eq!(dropped.devices.len(), 2);
    assert!(dropped.devices.iter().all(|d| d.iccid != ids[2]));

    let odd = cc.modified_since(before, 1).await.expect("page");
    assert_eq!(
        odd.devices[0]
            .network
            .as_ref()
            .err()
            .and_then(unintelligible),
        Some(AnswerFault::UnknownStatus)
    );
    assert!(odd.devices[1..].iter().all(|d| d.network.is_ok()));

    let html = cc.modified_since(before, 1).await.expect_err("html");
    assert_eq!(unintelligible(&html), Some(AnswerFault::NotJson));
}

// ---------------------------------------------------------------------------------------------
// Error handling: malformed answers, unknown ICCID, 5xx.

#[tokio::test]
async fn cc_error_handling_an_html_page_is_not_json() {
    let (sim, gw) = one_card().await;
    assert_eq!(
        fault_of(&sim, &*gw, CallKind::Usage, Malformed::Html).await,
        Some(AnswerFault::NotJson)
    );
    // Not a usage answer: the card's total did not move.
    assert_eq!(sim.state().card(ICCID).expect("card").usage_queries, 0);
}

#[tokio::test]
async fn cc_error_handling_an_answer_for_another_iccid_is_refused() {
    let (sim, gw) = with_cards_and(vec![card(ICCID, dec!(10))], default_adapter).await;
    for kind in [CallKind::Usage, CallKind::Realname, CallKind::Stop] {
        assert_eq!(
            fault_of(&sim, &*gw, kind, Malformed::WrongIccid).await,
            Some(AnswerFault::WrongIccid),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn cc_sim_status_values_an_undocumented_status_is_refused() {
    let (sim, gw) = one_card().await;
    for kind in [CallKind::Realname, CallKind::Stop] {
        assert_eq!(
            fault_of(&sim, &*gw, kind, Malformed::UnknownStatus).await,
            Some(AnswerFault::UnknownStatus),
            "{kind:?}"
        );
    }
    assert_eq!(
        sim.state().card(ICCID).expect("card").network_status,
        NetworkStatus::Online
    );
}

#[tokio::test]
async fn cc_error_codes_20000001_unknown_iccid_is_not_found() {
    let sim = sim().await;
    let gw = default_adapter(&sim);
    let unknown = "89860199999999999999";
    for kind in [CallKind::Usage, CallKind::Realname, CallKind::Stop] {
        assert_eq!(
            call(&*gw, kind, unknown).await,
            Err(GatewayError::NotFound),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn cc_error_codes_5xx_is_a_carrier_error() {
    let (sim, gw) = one_card().await;
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(500)]);
    match gw.usage(C, ICCID).await {
        Err(GatewayError::Carrier { status: 500, body }) => assert!(body.contains("30000001")),
        other => panic!("expected a 500, got {other:?}"),
    }
    set_script(&sim, CallKind::Realname, vec![ScriptStep::Status(503)]);
    assert!(matches!(
        gw.network_status(C, ICCID).await,
        Err(GatewayError::Carrier { status: 503, .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Authentication: HTTP Basic `username:api_key`.

/// The simulator's user with another key.
fn wrong_key(key: &str) -> Credentials {
    Credentials::new()
        .with("username", "sim-cc-user")
        .with("api_key", key)
}

#[tokio::test]
async fn cc_authentication_invalid_credentials_are_auth_after_one_request() {
    let sim = sim().await;
    register(&sim, &[ICCID]);
    let gw = adapter_with(&sim, wrong_key("not-the-key-4242"));
    let e = gw.usage(C, ICCID).await.expect_err("refused");
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
    assert!(e.to_string().contains("10000001"), "{e}");
    assert_eq!(sim.state().stats().requests, 1);
    // stop/start are not retried on a refusal either.
    let e = gw.stop(C, ICCID).await.expect_err("refused");
    assert!(matches!(e, GatewayError::Auth(_)));
    assert_eq!(sim.state().stats().requests, 2);
    assert!(matches!(gw.probe(C).await, Err(GatewayError::Auth(_))));
}

#[tokio::test]
async fn cc_authentication_has_no_token_a_rotated_key_is_auth_at_once() {
    let (sim, gw) = one_card().await;
    gw.probe(C).await.expect("probe");
    // No token is ever issued: nothing expires mid-run.
    assert_eq!(sim.state().expire_tokens(P), 0);
    assert!(gw.usage(C, ICCID).await.is_ok());
    // The operator rotates the key on the platform: the next call says so, once.
    let mut creds = SimAccount::default_for(P).credentials;
    creds.insert("api_key".into(), "rotated-key".into());
    sim.state().set_account(
        P,
        SimAccountPatch {
            credentials: Some(creds),
            ..SimAccountPatch::default()
        },
    );
    let before = sim.state().stats().requests;
    assert!(matches!(
        gw.usage(C, ICCID).await,
        Err(GatewayError::Auth(_))
    ));
    assert_eq!(sim.state().stats().requests, before + 1);
}

#[tokio::test]
async fn cc_authentication_no_error_shows_a_credential() {
    let (sim, gw) = one_card().await;
    let key = "sim-cc-api-key";
    let basic = "c2ltLWNjLXVzZXI6c2ltLWNjLWFwaS1rZXk="; // base64("sim-cc-user:sim-cc-api-key")
    let bad_key = "secret-wrong-key-9876";
    let bad = adapter_with(&sim, wrong_key(bad_key));

    let mut errors = vec![bad.usage(C, ICCID).await.expect_err("auth")];
    for step in [
        ScriptStep::Status(500),
        ScriptStep::Status(429),
        ScriptStep::Malformed(Malformed::Html),
        ScriptStep::Malformed(Malformed::WrongIccid),
    ] {
        set_script(&sim, CallKind::Usage, vec![step]);
        errors.push(gw.usage(C, ICCID).await.expect_err("fails"));
    }
    errors.push(
        gw.usage(C, "89860100000000000000")
            .await
            .expect_err("unknown"),
    );
    for e in &errors {
        assert_no_secret(e, &[key, basic, bad_key]);
    }
    let typed = typed_adapter(&sim);
    let debug = format!("{typed:?}");
    assert!(
        !debug.contains(key) && !debug.contains("sim-cc-user"),
        "{debug}"
    );
}

#[tokio::test]
async fn cc_authentication_probe_is_one_harmless_search() {
    let (sim, gw) = one_card().await;
    gw.probe(C).await.expect("probe");
    assert_eq!(sim.state().stats().requests, 1);
    let view = sim.state().card(ICCID).expect("card");
    assert_eq!((view.usage_queries, view.stop_calls), (0, 0));
}

// ---------------------------------------------------------------------------------------------
// API limits: 5 calls a second, one call at a time.

fn wall_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

#[tokio::test]
async fn cc_api_limits_the_sixth_call_within_a_second_is_throttled() {
    let (sim, gw) = one_card().await;
    set_limits(&sim, Some(5), Some(1));
    // Six calls within one wall-clock second; tried again should they straddle two.
    for _ in 0..3 {
        let ms = wall_ms() % 1000;
        tokio::time::sleep(Duration::from_millis((1000 - ms as u64) % 1000 + 5)).await;
        let start = wall_ms() / 1000;
        let mut results = Vec::new();
        for _ in 0..6 {
            results.push(gw.network_status(C, ICCID).await);
        }
        if wall_ms() / 1000 != start {
            continue;
        }
        for r in &results[..5] {
            assert_eq!(r, &Ok(NetworkStatus::Online));
        }
        assert_eq!(
            results[5],
            Err(GatewayError::Throttled {
                retry_after: Some(Duration::from_secs(1))
            })
        );
        // The platform's refusal, in its words.
        let raw = reqwest::Client::new()
            .get(format!("{}/v1/devices/{ICCID}", sim.url_of(P)))
            .basic_auth("sim-cc-user", Some("sim-cc-api-key"))
            .send()
            .await
            .expect("raw call");
        if wall_ms() / 1000 == start {
            assert_eq!(raw.status().as_u16(), 429);
            let body: serde_json::Value = raw.json().await.expect("json");
            assert!(body["errorCode"].is_string(), "{body}");
            assert!(body["errorMessage"].is_string(), "{body}");
        }
        return;
    }
    panic!("could not fit six calls into one wall-clock second");
}

#[tokio::test]
async fn cc_api_limits_a_second_concurrent_call_is_refused() {
    let sim = sim().await;
    register(&sim, &[ICCID]);
    set_limits(&sim, None, Some(1));
    sim.state()
        .set_faults(FaultsPatch {
            latency_ms: Some(300),
            ..FaultsPatch::default()
        })
        .expect("faults");

    // An adapter without our own bound sends both at once: the platform refuses one.
    let mut unbounded = cc_account(&sim, default_credentials(P));
    unbounded.limits.max_concurrent = 0;
    let gw = adapter(&unbounded, &ctx());
    let (a, b) = tokio::join!(gw.network_status(C, ICCID), gw.network_status(C, ICCID));
    let mut outcomes = [a, b];
    outcomes.sort_by_key(|r| r.is_err());
    assert_eq!(outcomes[0], Ok(NetworkStatus::Online));
    assert!(
        matches!(outcomes[1], Err(GatewayError::Throttled { .. })),
        "{:?}",
        outcomes[1]
    );

    // With the platform's published bound (max_concurrent 1, the default), both pass in turn.
    let gw = default_adapter(&sim);
    let (a, b) = tokio::join!(gw.network_status(C, ICCID), gw.network_status(C, ICCID));
    assert_eq!(
        (a, b),
        (Ok(NetworkStatus::Online), Ok(NetworkStatus::Online))
    );
}
