//! The OneLink EC API v5 adapter against the simulator's OneLink platform, in-process on port 0.
//! Test names carry the section of `docs/carriers/onelink.md` they follow.

mod common;

use axum::Router;
use axum::extract::RawQuery;
use axum::http::StatusCode;
use axum::routing::get;
use chrono::Months;
use common::carriers::*;
use common::sim;
use domain::{
    AssumedCalls, CarrierAccount, CarrierId, CarrierLimits, CarrierPackage, CarrierProtocol,
    Credentials, NetworkStatus, PackageStatus, RealNameStatus,
};
use gateway::{AnswerFault, BatchingGateway, CallKind, CarrierGateway, GatewayError};
use gateway_sim::{Malformed, ScriptStep, SimAccountPatch, SimCardSpec, SimHandle};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use std::sync::Arc;

const P: CarrierProtocol = CarrierProtocol::OneLink;
const C: CarrierId = CarrierId(7);

/// The simulated platform's account, with `creds` and `limits`.
fn onelink_account(sim: &SimHandle, creds: Credentials, limits: CarrierLimits) -> CarrierAccount {
    CarrierAccount {
        limits,
        ..account(sim, P, C, creds, limits.timeout_ms)
    }
}

fn adapter_with(
    sim: &SimHandle,
    creds: Credentials,
    limits: CarrierLimits,
) -> Arc<dyn CarrierGateway> {
    adapter(&onelink_account(sim, creds, limits), &ctx())
}

fn onelink(sim: &SimHandle) -> Arc<dyn CarrierGateway> {
    adapter_with(sim, default_credentials(P), P.default_limits())
}

/// The simulator with `cards`, and the adapter of its account.
async fn setup(cards: Vec<SimCardSpec>) -> (SimHandle, Arc<dyn CarrierGateway>) {
    with_cards_and(cards, onelink).await
}

/// `limits` with the three assumed batch queries turned on.
fn assumed(limits: CarrierLimits) -> CarrierLimits {
    CarrierLimits {
        assumed_calls: AssumedCalls::all(),
        ..limits
    }
}

/// The simulator serves the assumed batch paths (by default it answers them 404).
fn serve_assumed(sim: &SimHandle) {
    set_account(
        sim,
        SimAccountPatch {
            assumed_calls: Some(true),
            ..SimAccountPatch::default()
        },
    );
}

/// The simulator with `cards`, serving the assumed batch paths, and the adapter of its account
/// with them turned on.
async fn setup_assumed(cards: Vec<SimCardSpec>) -> (SimHandle, Arc<dyn CarrierGateway>) {
    with_cards_and(cards, |sim| {
        serve_assumed(sim);
        adapter_with(sim, default_credentials(P), assumed(P.default_limits()))
    })
    .await
}

/// Requests the simulator answered "not found" (an unknown card, or a path it does not have).
fn not_found(sim: &SimHandle) -> u64 {
    sim.state()
        .stats()
        .by_outcome
        .get("not_found")
        .copied()
        .unwrap_or(0)
}

/// A stand-in platform serving `app` on port 0, and the adapter of the simulator's account
/// pointed at it.
async fn stand_in(sim: &SimHandle, app: Router) -> Arc<dyn CarrierGateway> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let account = CarrierAccount {
        base_url: format!("http://{addr}"),
        ..onelink_account(sim, default_credentials(P), P.default_limits())
    };
    adapter(&account, &ctx())
}

fn set_account(sim: &SimHandle, patch: SimAccountPatch) {
    sim.state().set_account(P, patch);
}

fn no_change_lock(sim: &SimHandle) {
    set_account(
        sim,
        SimAccountPatch {
            change_lock_secs: Some(0),
            ..SimAccountPatch::default()
        },
    );
}

/// `malformed` scripted for the next requests of `kind` (one per call), then each of `calls` of
/// `iccid` is an answer not understood of its fault.
async fn assert_not_understood(
    sim: &SimHandle,
    gw: &Arc<dyn CarrierGateway>,
    iccid: &str,
    (kind, malformed): (CallKind, Malformed),
    calls: &[(Call, AnswerFault)],
) {
    set_script(
        sim,
        kind,
        vec![ScriptStep::Malformed(malformed); calls.len()],
    );
    for &(call, fault) in calls {
        let e = one(&**gw, C, call, iccid)
            .await
            .expect_err("an answer not understood");
        assert_eq!(
            unintelligible(&e),
            Some(fault),
            "{malformed:?}: {call:?} gave {e:?}"
        );
    }
}

// ---------------------------------------------------------------- 5 authentication

#[tokio::test]
async fn onelink_5_1_get_token_is_cached_and_renewed_when_expired() {
    let (sim, gw) = setup(vec![SimCardSpec::new("898600A1")]).await;

    gw.usage(C, "898600A1").await.unwrap();
    gw.usage(C, "898600A1").await.unwrap();
    // Token requests count as `realname` in the sim's stats: one token for both calls.
    assert_eq!(requests(&sim, CallKind::Realname), 1, "the token is cached");
    assert_eq!(requests(&sim, CallKind::Usage), 2);

    // The token lapses mid-run: the next call is refused with 12021, renewed, sent again.
    assert_eq!(sim.state().expire_tokens(P), 1);
    let u = gw.usage(C, "898600A1").await.expect("renewal is invisible");
    assert_eq!(u.month_total_mb, dec!(0));
    assert_eq!(requests(&sim, CallKind::Realname), 2, "one new token");
    assert_eq!(
        requests(&sim, CallKind::Usage),
        4,
        "the refused request and its resend"
    );

    // A short-lived token is renewed before it lapses, without a refusal.
    set_account(
        &sim,
        SimAccountPatch {
            token_ttl_secs: Some(1),
            ..SimAccountPatch::default()
        },
    );
    sim.state().expire_tokens(P);
    gw.usage(C, "898600A1").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    gw.usage(C, "898600A1").await.expect("renewed in time");
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_5_1_refused_credentials_are_auth_without_a_second_decision() {
    let (sim, _) = setup(vec![SimCardSpec::new("898600B1")]).await;
    let creds = default_credentials(P).with("password", "not-the-password");
    let gw = adapter_with(&sim, creds, P.default_limits());

    let e = gw.usage(C, "898600B1").await.unwrap_err();
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
    assert!(!e.is_retryable());
    let e = gw.stop(C, "898600B1").await.unwrap_err();
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
    // One token request in all (the refusal is remembered: the second call does not ask the
    // platform's login again), no retry, and the change never reached the platform.
    assert_eq!(requests(&sim, CallKind::Realname), 1);
    assert_eq!(requests(&sim, CallKind::Stop), 0);
    let card = sim.state().card("898600B1").unwrap();
    assert_eq!(
        (card.stop_calls, card.network_status),
        (0, NetworkStatus::Online)
    );
    assert_no_secret(&e, &["not-the-password"]);

    assert!(matches!(gw.probe(C).await, Err(GatewayError::Auth(_))));
    assert_eq!(onelink(&sim).probe(C).await, Ok(()));
    sim.shutdown().await.unwrap();
}

/// A platform whose every token is refused at once (`12021`): one renewal, then `Auth`.
#[tokio::test]
async fn onelink_5_1_a_token_refused_after_renewal_is_auth() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static TOKENS: AtomicUsize = AtomicUsize::new(0);
    static QUERIES: AtomicUsize = AtomicUsize::new(0);
    let app = Router::new()
        .route(
            "/get/token",
            get(|| async {
                let n = TOKENS.fetch_add(1, Ordering::SeqCst);
                axum::Json(serde_json::json!({
                    "status": "0", "message": "正确",
                    "result": [{ "token": format!("token-{n}"), "ttl": "3600" }],
                }))
            }),
        )
        .route(
            "/query/sim-data-usage",
            get(|| async {
                QUERIES.fetch_add(1, Ordering::SeqCst);
                axum::Json(serde_json::json!({
                    "status": "12021", "message": "token不存在或已过期", "result": [],
                }))
            }),
        );
    let sim = sim().await;
    let gw = stand_in(&sim, app).await;

    let e = gw.usage(C, "898600B2").await.unwrap_err();
    assert!(matches!(e, GatewayError::Auth(_)), "{e:?}");
    assert_eq!(
        TOKENS.load(Ordering::SeqCst),
        2,
        "the first token and one renewal"
    );
    assert_eq!(QUERIES.load(Ordering::SeqCst), 2, "no loop");
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 6 real-name

#[tokio::test]
async fn onelink_6_1_realname_status_and_its_change() {
    let (sim, gw) = setup(vec![SimCardSpec {
        real_name_status: RealNameStatus::NotVerified,
        ..SimCardSpec::new("898600C1")
    }])
    .await;
    assert_eq!(
        gw.realname(C, "898600C1").await,
        Ok(RealNameStatus::NotVerified)
    );
    set_realname(&sim, "898600C1", RealNameStatus::Verified);
    assert_eq!(
        gw.realname(C, "898600C1").await,
        Ok(RealNameStatus::Verified)
    );
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 7 usage

#[tokio::test]
async fn onelink_7_1_usage_in_kb_is_exact_megabytes() {
    let (sim, gw) = setup(vec![
        card("898600D1", dec!(100.5)),
        // 1025 KB: not a round megabyte.
        card("898600D2", dec!(1.0009765625)),
        SimCardSpec {
            growth_mb_per_query: Some(dec!(0.25)),
            ..card("898600D3", dec!(10))
        },
    ])
    .await;
    assert_usage_this_month(&*gw, C, "898600D1", dec!(100.5)).await;
    assert_eq!(
        gw.usage(C, "898600D1").await.unwrap().month_total_mb,
        dec!(100.5),
        "growth 0 keeps it"
    );
    assert_eq!(
        gw.usage(C, "898600D2").await.unwrap().month_total_mb,
        dec!(1.0009765625)
    );
    assert_eq!(
        gw.usage(C, "898600D3").await.unwrap().month_total_mb,
        dec!(10.25)
    );
    assert_eq!(
        gw.usage(C, "898600D3").await.unwrap().month_total_mb,
        dec!(10.5)
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_7_2_a_new_month_starts_from_zero() {
    let last_month = this_month().checked_sub_months(Months::new(1)).unwrap();
    let (sim, gw) = setup(vec![SimCardSpec {
        growth_mb_per_query: Some(dec!(1.5)),
        month: Some(last_month.format("%Y-%m").to_string()),
        ..card("898600E1", dec!(500))
    }])
    .await;
    assert_usage_this_month(&*gw, C, "898600E1", dec!(1.5)).await;
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 8 packages

#[tokio::test]
async fn onelink_8_1_offerings_margin_become_packages() {
    let pkg = |id: &str, status, used, limit| CarrierPackage {
        external_id: id.into(),
        status,
        used_mb: used,
        limit_mb: limit,
        activated_at: None,
        expires_at: None,
    };
    let (sim, gw) = setup(vec![SimCardSpec {
        packages: vec![
            pkg(
                "OFFER-1",
                PackageStatus::Active,
                dec!(12.5),
                Some(dec!(1024)),
            ),
            pkg("OFFER-2", PackageStatus::Active, dec!(0.0009765625), None),
            pkg(
                "OFFER-OLD",
                PackageStatus::Expired,
                dec!(30),
                Some(dec!(30)),
            ),
        ],
        ..SimCardSpec::new("898600F1")
    }])
    .await;
    assert_eq!(
        gw.packages(C, "898600F1").await.unwrap(),
        vec![
            pkg(
                "OFFER-1",
                PackageStatus::Active,
                dec!(12.5),
                Some(dec!(1024))
            ),
            pkg("OFFER-2", PackageStatus::Active, dec!(0.0009765625), None),
        ],
        "the offerings in force, used and total from KB"
    );
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 9 SIM status

#[tokio::test]
async fn onelink_9_1_sim_status_is_read_without_changing_it() {
    let (sim, gw) = setup(vec![
        SimCardSpec::new("898600G1"),
        SimCardSpec {
            network_status: NetworkStatus::Stopped,
            ..SimCardSpec::new("898600G2")
        },
    ])
    .await;
    assert_eq!(
        gw.network_status(C, "898600G1").await,
        Ok(NetworkStatus::Online)
    );
    assert_eq!(
        gw.network_status(C, "898600G2").await,
        Ok(NetworkStatus::Stopped)
    );
    assert_eq!(sim.state().card("898600G2").unwrap().stop_calls, 0);
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 10 stop / resume

#[tokio::test]
async fn onelink_10_1_stop_then_start_answer_the_status_after() {
    let (sim, gw) = setup(vec![SimCardSpec::new("898600H1")]).await;
    no_change_lock(&sim);

    assert_stop_then_start(&sim, &*gw, C, "898600H1").await;
    let v = assert_one_stop_one_start(&sim, "898600H1");
    assert_eq!(v.network_status, NetworkStatus::Online);
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_10_1_stopping_a_stopped_card_is_done_without_a_change() {
    let (sim, gw) = setup(vec![SimCardSpec {
        network_status: NetworkStatus::Stopped,
        ..SimCardSpec::new("898600H2")
    }])
    .await;
    // The platform refuses (12035, the status does not allow it); the adapter reads the status.
    assert_eq!(gw.stop(C, "898600H2").await, Ok(NetworkStatus::Stopped));
    let v = sim.state().card("898600H2").unwrap();
    assert_eq!((v.stop_calls, v.stops_applied), (1, 0));
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_10_2_a_second_change_within_the_lock_is_change_locked_and_not_retried() {
    let (sim, gw) = setup(vec![SimCardSpec::new("898600H3")]).await;
    assert_eq!(sim.state().account(P).change_lock_secs, 300);

    assert_eq!(gw.stop(C, "898600H3").await, Ok(NetworkStatus::Stopped));
    let e = gw.start(C, "898600H3").await.unwrap_err();
    match &e {
        GatewayError::ChangeLocked { retry_after, .. } => assert!(retry_after.is_some()),
        other => panic!("expected ChangeLocked, got {other:?}"),
    }
    assert!(e.is_retryable(), "later, not now");
    let v = sim.state().card("898600H3").unwrap();
    assert_eq!(
        v.start_calls, 1,
        "not retried within the command's retry loop"
    );
    assert_eq!(v.starts_applied, 0);
    assert_eq!(
        v.network_status,
        NetworkStatus::Stopped,
        "never read as done"
    );
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 11 batch queries

#[tokio::test]
async fn onelink_11_1_assumed_batch_queries_answer_in_the_input_order() {
    let (sim, gw) = setup_assumed(vec![
        SimCardSpec {
            real_name_status: RealNameStatus::NotVerified,
            ..card("898600J1", dec!(2.5))
        },
        SimCardSpec {
            network_status: NetworkStatus::Stopped,
            ..card("898600J2", dec!(0.0009765625))
        },
        SimCardSpec::new("898600J3"),
    ])
    .await;
    assert_eq!(gw.batch_size(C), 100);
    let asked = iccids(&["898600J3", "898600J1", "unknown-card", "898600J2"]);

    assert_eq!(
        gw.realname_batch(C, &asked).await.unwrap(),
        vec![
            Ok(RealNameStatus::Verified),
            Ok(RealNameStatus::NotVerified),
            Err(GatewayError::NotFound),
            Ok(RealNameStatus::Verified),
        ]
    );
    let usage = gw.usage_batch(C, &asked).await.unwrap();
    let totals: Vec<_> = usage
        .iter()
        .map(|r| r.as_ref().map(|u| u.month_total_mb).map_err(Clone::clone))
        .collect();
    assert_eq!(
        totals,
        vec![
            Ok(dec!(0)),
            Ok(dec!(2.5)),
            Err(GatewayError::NotFound),
            Ok(dec!(0.0009765625))
        ]
    );
    assert_eq!(
        gw.network_status_batch(C, &asked).await.unwrap(),
        vec![
            Ok(NetworkStatus::Online),
            Ok(NetworkStatus::Online),
            Err(GatewayError::NotFound),
            Ok(NetworkStatus::Stopped),
        ]
    );
    // One request each (plus the token).
    assert_eq!(requests(&sim, CallKind::Usage), 1);
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_11_2_a_card_dropped_from_a_batch_answer_is_missing() {
    let (sim, gw) = setup_assumed(vec![
        card("898600K1", dec!(1)),
        card("898600K2", dec!(2)),
        card("898600K3", dec!(3)),
    ])
    .await;
    set_script(
        &sim,
        CallKind::Usage,
        vec![ScriptStep::Malformed(Malformed::DropLast)],
    );
    let got = gw
        .usage_batch(C, &iccids(&["898600K1", "898600K2", "898600K3"]))
        .await
        .unwrap();
    assert_eq!(got[0].as_ref().unwrap().month_total_mb, dec!(1));
    assert_eq!(got[1].as_ref().unwrap().month_total_mb, dec!(2));
    assert_eq!(got[2], Err(GatewayError::MissingFromBatch));
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_11_2_a_batch_item_naming_another_card_is_never_attributed() {
    let (sim, gw) = setup_assumed(vec![
        SimCardSpec {
            real_name_status: RealNameStatus::NotVerified,
            ..SimCardSpec::new("898600L1")
        },
        SimCardSpec::new("898600L2"),
    ])
    .await;
    gw.probe(C).await.unwrap();
    gw.usage(C, "898600L2").await.unwrap(); // the token is cached before the script
    set_script(
        &sim,
        CallKind::Realname,
        vec![ScriptStep::Malformed(Malformed::WrongIccid)],
    );
    assert_eq!(
        gw.realname_batch(C, &iccids(&["898600L1", "898600L2"]))
            .await
            .unwrap(),
        vec![
            Err(GatewayError::MissingFromBatch),
            Ok(RealNameStatus::Verified)
        ]
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_11_3_batches_are_split_at_the_batch_size_and_refused_beyond_the_platform_limit() {
    let cards = ["898600M1", "898600M2", "898600M3", "898600M4", "898600M5"];
    let (sim, _) = setup_assumed(cards.iter().map(|c| SimCardSpec::new(*c)).collect()).await;

    // Our batch size 2: five cards in three requests.
    let limits = CarrierLimits {
        batch_size: 2,
        ..assumed(P.default_limits())
    };
    let gw = adapter_with(&sim, default_credentials(P), limits);
    assert_eq!(gw.batch_size(C), 2);
    let got = gw.usage_batch(C, &iccids(&cards)).await.unwrap();
    assert!(got.iter().all(|r| r.is_ok()), "{got:?}");
    assert_eq!(requests(&sim, CallKind::Usage), 3);

    // A platform that takes fewer cards than we send refuses the request (12034).
    set_account(
        &sim,
        SimAccountPatch {
            batch_limit: Some(2),
            ..SimAccountPatch::default()
        },
    );
    let e = adapter_with(&sim, default_credentials(P), assumed(P.default_limits()))
        .usage_batch(C, &iccids(&cards[..3]))
        .await
        .unwrap_err();
    match &e {
        GatewayError::Carrier { body, .. } => assert!(body.contains("12034"), "{body}"),
        other => panic!("expected the platform's refusal, got {other:?}"),
    }
    assert!(!e.is_retryable());
    // Our batch size never exceeds the platform's documented 100.
    let big = CarrierLimits {
        batch_size: 500,
        ..assumed(P.default_limits())
    };
    assert_eq!(
        adapter_with(&sim, default_credentials(P), big).batch_size(C),
        100
    );
    sim.shutdown().await.unwrap();
}

/// Twenty cards: usage `n` MB (card 0 none this month: a blank figure), real-name verified but
/// every third, online but every fourth.
fn twenty_cards() -> (Vec<String>, Vec<SimCardSpec>) {
    let iccids: Vec<String> = (0..20).map(|n| format!("898600D{n:02}")).collect();
    let specs = iccids
        .iter()
        .enumerate()
        .map(|(n, iccid)| SimCardSpec {
            real_name_status: if n % 3 == 0 {
                RealNameStatus::NotVerified
            } else {
                RealNameStatus::Verified
            },
            network_status: if n % 4 == 0 {
                NetworkStatus::Stopped
            } else {
                NetworkStatus::Online
            },
            ..card(iccid, Decimal::from(n))
        })
        .collect();
    (iccids, specs)
}

/// Every card of [`twenty_cards`] got its own figures.
fn assert_twenty(
    usage: &[Result<domain::MonthUsage, GatewayError>],
    realname: &[Result<RealNameStatus, GatewayError>],
    status: &[Result<NetworkStatus, GatewayError>],
) {
    assert_eq!((usage.len(), realname.len(), status.len()), (20, 20, 20));
    for n in 0..20 {
        let u = usage[n].as_ref().expect("usage of every card");
        assert_eq!(u.month_total_mb, Decimal::from(n), "card {n}");
        assert_eq!(u.month, this_month());
        let r = if n % 3 == 0 {
            RealNameStatus::NotVerified
        } else {
            RealNameStatus::Verified
        };
        assert_eq!(realname[n], Ok(r), "card {n}");
        let s = if n % 4 == 0 {
            NetworkStatus::Stopped
        } else {
            NetworkStatus::Online
        };
        assert_eq!(status[n], Ok(s), "card {n}");
    }
}

#[tokio::test]
async fn onelink_2_default_settings_poll_twenty_cards_with_the_documented_calls_only() {
    let (cards, specs) = twenty_cards();
    let (sim, gw) = setup(specs).await;
    assert!(
        !sim.state().account(P).assumed_calls,
        "the simulator refuses the assumed paths"
    );
    assert_eq!(gw.batch_size(C), 1, "no assumed batch query: no lane");

    // The batch calls of the trait, as a caller makes them: each card asked singly.
    let usage = gw.usage_batch(C, &cards).await.unwrap();
    let realname = gw.realname_batch(C, &cards).await.unwrap();
    let status = gw.network_status_batch(C, &cards).await.unwrap();
    assert_twenty(&usage, &realname, &status);
    assert_eq!(
        requests(&sim, CallKind::Usage),
        20,
        "one single call a card"
    );

    // The worker's wiring: concurrent polls through the batching dispatch.
    let batching: Arc<dyn CarrierGateway> = Arc::new(BatchingGateway::new(
        gw.clone(),
        std::time::Duration::from_millis(20),
    ));
    let polls = cards.iter().map(|iccid| {
        let gw = batching.clone();
        async move {
            (
                gw.usage(C, iccid).await,
                gw.realname(C, iccid).await,
                gw.network_status(C, iccid).await,
            )
        }
    });
    let got = futures::future::join_all(polls).await;
    let usage: Vec<_> = got.iter().map(|g| g.0.clone()).collect();
    let realname: Vec<_> = got.iter().map(|g| g.1.clone()).collect();
    let status: Vec<_> = got.iter().map(|g| g.2.clone()).collect();
    assert_twenty(&usage, &realname, &status);
    assert_eq!(
        not_found(&sim),
        0,
        "no request to a path the platform lacks"
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_11_4_an_assumed_query_the_platform_lacks_is_turned_off_at_its_first_refusal() {
    let (cards, specs) = twenty_cards();
    // Turned on for the carrier; the platform (the simulator's default) has no such path.
    let (sim, gw) = with_cards_and(specs, |sim| {
        adapter_with(sim, default_credentials(P), assumed(P.default_limits()))
    })
    .await;
    assert_eq!(gw.batch_size(C), 100);

    let usage = gw.usage_batch(C, &cards).await.unwrap();
    assert_eq!(not_found(&sim), 1, "one refusal of the batch path");
    assert_eq!(gw.batch_size(C), 100, "the other two are still on");
    let realname = gw.realname_batch(C, &cards).await.unwrap();
    let status = gw.network_status_batch(C, &cards).await.unwrap();
    assert_twenty(&usage, &realname, &status);
    assert_eq!(not_found(&sim), 3, "one refusal each");
    assert_eq!(gw.batch_size(C), 1, "all three off: no lane");

    // Turned off for good: the next polls go straight to the single calls.
    let again = gw.usage_batch(C, &cards).await.unwrap();
    assert!(again.iter().all(Result::is_ok), "{again:?}");
    assert_eq!(not_found(&sim), 3, "never asked again");
    // 1 refusal + 20 single calls + 20 single calls.
    assert_eq!(requests(&sim, CallKind::Usage), 41);
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_11_4_an_http_405_is_a_missing_interface_too() {
    let app = Router::new()
        .route(
            "/get/token",
            get(|| async {
                axum::Json(serde_json::json!({
                    "status": "0", "message": "正确",
                    "result": [{ "token": "t-405", "ttl": "3600" }],
                }))
            }),
        )
        .route(
            "/query/sim-data-usage/batch",
            get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        )
        .route(
            "/query/sim-data-usage",
            get(|| async {
                axum::Json(serde_json::json!({
                    "status": "0", "message": "正确",
                    "result": [{ "dataAmount": "2048" }],
                }))
            }),
        );
    let sim = sim().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let account = CarrierAccount {
        base_url: format!("http://{addr}"),
        ..onelink_account(&sim, default_credentials(P), assumed(P.default_limits()))
    };
    let gw = adapter(&account, &ctx());
    let got = gw
        .usage_batch(C, &iccids(&["898600X1", "898600X2"]))
        .await
        .unwrap();
    for u in got {
        assert_eq!(u.unwrap().month_total_mb, dec!(2));
    }
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 7.3 blank usage

#[tokio::test]
async fn onelink_7_3_a_blank_usage_is_zero_this_month() {
    // The simulator answers a card without usage this month with `dataAmount` "".
    let (sim, gw) = setup(vec![SimCardSpec::new("898600B1")]).await;
    let u = gw.usage(C, "898600B1").await.expect("a blank is no usage");
    assert_eq!(u.month_total_mb, dec!(0));
    assert_eq!(u.month, this_month());
    assert_eq!(
        gw.usage_batch(C, &iccids(&["898600B1"])).await.unwrap()[0]
            .as_ref()
            .map(|u| u.month_total_mb),
        Ok(dec!(0))
    );

    // A blank of spaces, from a stand-in platform.
    let app = Router::new()
        .route(
            "/get/token",
            get(|| async {
                axum::Json(serde_json::json!({
                    "status": "0", "message": "正确",
                    "result": [{ "token": "t-blank", "ttl": "3600" }],
                }))
            }),
        )
        .route(
            "/query/sim-data-usage",
            get(|| async {
                axum::Json(serde_json::json!({
                    "status": "0", "message": "正确",
                    "result": [{ "dataAmount": " ", "apnUseAmountList": [] }],
                }))
            }),
        );
    let blank = stand_in(&sim, app).await;
    let u = blank
        .usage(C, "898600B2")
        .await
        .expect("spaces are a blank");
    assert_eq!(u.month_total_mb, dec!(0));
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 5.4 ttl 0

#[tokio::test]
async fn onelink_5_4_a_token_with_ttl_0_serves_its_request_and_is_fetched_again() {
    let (sim, gw) = setup(vec![card("898600T1", dec!(3))]).await;
    set_account(
        &sim,
        SimAccountPatch {
            token_ttl_secs: Some(0),
            ..SimAccountPatch::default()
        },
    );
    for _ in 0..3 {
        let u = gw
            .usage(C, "898600T1")
            .await
            .expect("a ttl of 0 is accepted");
        assert_eq!(u.month_total_mb, dec!(3));
    }
    // Token requests count as `realname`: one fresh token per request, none refused.
    assert_eq!(requests(&sim, CallKind::Realname), 3, "never kept");
    assert_eq!(
        requests(&sim, CallKind::Usage),
        3,
        "no request refused for its token"
    );
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- 3 answers and errors

#[tokio::test]
async fn onelink_3_2_an_html_page_is_not_json() {
    let (sim, gw) = setup(vec![SimCardSpec::new("898600N1")]).await;
    assert_not_understood(
        &sim,
        &gw,
        "898600N1",
        (CallKind::Usage, Malformed::Html),
        &[(Call::Usage, AnswerFault::NotJson)],
    )
    .await;
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_3_2_an_answer_naming_another_card_is_wrong_iccid() {
    let (sim, gw) = setup(vec![SimCardSpec::new("898600N2")]).await;
    // `DropLast`: a single-card answer without its card.
    for (malformed, fault) in [
        (Malformed::WrongIccid, AnswerFault::WrongIccid),
        (Malformed::DropLast, AnswerFault::MissingField),
    ] {
        let calls = [(Call::Usage, fault)];
        assert_not_understood(&sim, &gw, "898600N2", (CallKind::Usage, malformed), &calls).await;
    }
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_3_2_a_status_outside_the_table_is_unknown_status() {
    let (sim, gw) = setup(vec![SimCardSpec::new("898600N3")]).await;
    gw.usage(C, "898600N3").await.unwrap(); // the token is cached before the script
    assert_not_understood(
        &sim,
        &gw,
        "898600N3",
        (CallKind::Realname, Malformed::UnknownStatus),
        &[
            (Call::Realname, AnswerFault::UnknownStatus),
            (Call::NetworkStatus, AnswerFault::UnknownStatus),
        ],
    )
    .await;
    // A status code of the envelope outside the documented table.
    assert_not_understood(
        &sim,
        &gw,
        "898600N3",
        (CallKind::Usage, Malformed::UnknownStatus),
        &[(Call::Usage, AnswerFault::UnknownCode)],
    )
    .await;
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_3_1_unknown_card_is_not_found() {
    let (sim, gw) = setup(vec![]).await;
    let calls = [Call::Usage, Call::Realname, Call::Packages, Call::Stop];
    assert_not_found(&*gw, C, "nope", &calls).await;
    assert_eq!(requests(&sim, CallKind::Stop), 1, "a NotFound is final");
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_3_3_server_errors_are_carrier_and_throttling_is_throttled() {
    let (sim, gw) = setup(vec![SimCardSpec::new("898600P1")]).await;
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(503)]);
    match gw.usage(C, "898600P1").await {
        Err(e @ GatewayError::Carrier { status: 503, .. }) => assert!(e.is_retryable()),
        other => panic!("expected Carrier 503, got {other:?}"),
    }
    assert_a_scripted_429_is_throttled(&sim, &*gw, C, "898600P1").await;
    assert!(gw.usage(C, "898600P1").await.is_ok());
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_4_1_the_platform_rate_limit_is_throttled() {
    let (sim, gw) = setup(vec![SimCardSpec::new("898600Q1")]).await;
    gw.usage(C, "898600Q1").await.unwrap();
    rate_limit(&sim, P, 1);
    let mut throttled = 0;
    for _ in 0..3 {
        match gw.usage(C, "898600Q1").await {
            Ok(_) => {}
            Err(GatewayError::Throttled { .. }) => throttled += 1,
            Err(e) => panic!("expected Throttled, got {e:?}"),
        }
    }
    assert!(
        throttled >= 1,
        "three requests within a second or two, one allowed a second"
    );
    sim.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- credentials never shown

/// A platform that echoes every request (query string included) into a 500 answer, issuing a
/// known token: whatever the adapter reports must carry no credential and no token.
#[tokio::test]
async fn onelink_5_3_no_error_shows_a_credential_or_a_token() {
    const TOKEN: &str = "tok-0123456789abcdef-secret";
    let app = Router::new()
        .route(
            "/get/token",
            get(|| async {
                axum::Json(serde_json::json!({
                    "status": "0", "message": "正确",
                    "result": [{ "token": TOKEN, "ttl": "3600" }],
                }))
            }),
        )
        .route(
            "/query/sim-data-usage",
            get(|RawQuery(q): RawQuery| async move {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("failed: {}", q.unwrap_or_default()),
                )
            }),
        )
        .route(
            "/query/sim-real-name-status",
            get(|RawQuery(q): RawQuery| async move {
                axum::Json(serde_json::json!({
                    "status": "12345", "message": format!("echo {}", q.unwrap_or_default()),
                    "result": [],
                }))
            }),
        );
    let sim = sim().await;
    let gw = stand_in(&sim, app).await;
    let mut errors = vec![
        gw.usage(C, "898600R1").await.unwrap_err(),
        gw.realname(C, "898600R1").await.unwrap_err(),
    ];
    assert!(matches!(
        errors[0],
        GatewayError::Carrier { status: 500, .. }
    ));
    assert_eq!(unintelligible(&errors[1]), Some(AnswerFault::UnknownCode));

    // And the simulator's own refusals.
    let creds = default_credentials(P);
    let bad = creds.clone().with("password", "wrong-password-value");
    errors.push(
        adapter_with(&sim, bad, P.default_limits())
            .usage(C, "x")
            .await
            .unwrap_err(),
    );
    set_script(&sim, CallKind::Usage, vec![ScriptStep::Status(502)]);
    errors.push(onelink(&sim).usage(C, "x").await.unwrap_err());

    let mut secrets: Vec<&str> = creds.values().map(|s| s.expose()).collect();
    secrets.extend([TOKEN, "wrong-password-value"]);
    for e in &errors {
        assert_no_secret(e, &secrets);
    }
    sim.shutdown().await.unwrap();
}
