//! The HTTP client against the simulator, in-process on port 0.

mod common;

use chrono::{NaiveDate, TimeZone, Utc};
use common::{client, config, register, sim, sim_with};
use domain::{
    CarrierId, CarrierPackage, ManualClock, NetworkStatus, PackageStatus, RealNameStatus,
};
use gateway::{CallKind, CarrierGateway, GatewayError, HttpGateway};
use gateway_sim::{
    FaultsPatch, Script, ScriptStep, SimCardPatch, SimCardSpec, SimControl, SimOptions,
};
use rust_decimal_macros::dec;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn script(call: CallKind, steps: &[u16]) -> Script {
    Script {
        fail_next: steps.iter().map(|s| ScriptStep::Status(*s)).collect(),
        call: Some(call),
    }
}

#[tokio::test]
async fn every_call_round_trips() {
    // 2026-03-31 17:00 UTC is already April 1st in Shanghai: the sim reports its own month.
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 3, 31, 17, 0, 0).unwrap());
    let sim = sim_with(SimOptions {
        clock: Arc::new(clock),
        ..SimOptions::default()
    })
    .await;
    let pkg = CarrierPackage {
        external_id: "P-1".into(),
        status: PackageStatus::Active,
        used_mb: dec!(12.5),
        limit_mb: Some(dec!(1024)),
        activated_at: Some(Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap()),
        expires_at: None,
    };
    let spec = SimCardSpec {
        real_name_status: RealNameStatus::NotVerified,
        month_total_mb: dec!(100.5),
        packages: vec![pkg.clone()],
        ..SimCardSpec::new("89860000000000000001")
    };
    sim.state().upsert_cards(vec![spec]).unwrap();
    let gw = client(&sim);
    let id = "89860000000000000001";

    assert_eq!(
        gw.realname(CarrierId(1), id).await.unwrap(),
        RealNameStatus::NotVerified
    );
    let usage = gw.usage(CarrierId(1), id).await.unwrap();
    assert_eq!(usage.month, NaiveDate::from_ymd_opt(2026, 4, 1).unwrap());
    assert_eq!(usage.month_total_mb, dec!(100.5));
    assert_eq!(gw.packages(CarrierId(1), id).await.unwrap(), vec![pkg]);
    assert_eq!(
        gw.stop(CarrierId(1), id).await.unwrap(),
        NetworkStatus::Stopped
    );
    assert_eq!(
        sim.state().card(id).unwrap().network_status,
        NetworkStatus::Stopped
    );
    assert_eq!(
        gw.start(CarrierId(1), id).await.unwrap(),
        NetworkStatus::Online
    );

    let view = sim.state().card(id).unwrap();
    assert_eq!(
        (
            view.stop_calls,
            view.start_calls,
            view.stops_applied,
            view.starts_applied
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(view.network_status, NetworkStatus::Online);
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_card_is_not_found_and_never_retried() {
    let sim = sim().await;
    let gw = client(&sim);
    assert_eq!(
        gw.usage(CarrierId(1), "nope").await,
        Err(GatewayError::NotFound)
    );
    assert_eq!(
        gw.stop(CarrierId(1), "nope").await,
        Err(GatewayError::NotFound)
    );
    let stats = sim.state().stats();
    assert_eq!(stats.by_call["stop"], 1, "a 404 is final");
    assert_eq!(stats.by_outcome["not_found"], 2);
}

#[tokio::test]
async fn timeout_fires_at_the_configured_bound_without_blocking_the_sim() {
    let sim = sim().await;
    register(&sim, &["1"]);
    sim.state()
        .set_faults(FaultsPatch {
            timeout_rate: Some(1.0),
            ..FaultsPatch::default()
        })
        .unwrap();
    let gw = HttpGateway::new(
        gateway::GatewayConfig {
            timeout: Duration::from_millis(300),
            ..config(&sim)
        },
        None,
    )
    .unwrap();
    let started = Instant::now();
    assert_eq!(
        gw.realname(CarrierId(1), "1").await,
        Err(GatewayError::Timeout)
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(290) && elapsed < Duration::from_millis(600),
        "{elapsed:?}"
    );

    // A hanging request holds only itself: others are answered at once.
    sim.state()
        .set_faults(FaultsPatch {
            timeout_rate: Some(0.0),
            ..FaultsPatch::default()
        })
        .unwrap();
    sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Hang(gateway_sim::Hang::Hang)],
        call: Some(CallKind::Usage),
    });
    let slow = tokio::spawn({
        let gw = gw.clone();
        async move { gw.usage(CarrierId(1), "1").await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let quick = Instant::now();
    assert_eq!(
        gw.realname(CarrierId(1), "1").await,
        Ok(RealNameStatus::Verified)
    );
    assert!(quick.elapsed() < Duration::from_millis(200));
    assert_eq!(slow.await.unwrap(), Err(GatewayError::Timeout));
    // Shutdown ends hanging requests instead of waiting for them.
    sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Hang(gateway_sim::Hang::Hang)],
        call: None,
    });
    let _hanging = tokio::spawn({
        let gw = client(&sim);
        async move { gw.realname(CarrierId(1), "1").await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stopping = Instant::now();
    sim.shutdown().await.unwrap();
    assert!(stopping.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn stop_succeeds_on_the_third_try_after_two_503s() {
    let sim = sim().await;
    register(&sim, &["1"]);
    sim.state().set_script(script(CallKind::Stop, &[503, 503]));
    assert_eq!(
        client(&sim).stop(CarrierId(1), "1").await,
        Ok(NetworkStatus::Stopped)
    );
    let view = sim.state().card("1").unwrap();
    assert_eq!(view.stop_calls, 3);
    assert_eq!(view.stops_applied, 1);
}

#[tokio::test]
async fn stop_fails_with_the_last_error_after_three_tries() {
    let sim = sim().await;
    register(&sim, &["1"]);
    sim.state()
        .set_script(script(CallKind::Stop, &[503, 502, 500, 503]));
    let err = client(&sim).stop(CarrierId(1), "1").await.unwrap_err();
    assert!(
        matches!(err, GatewayError::Carrier { status: 500, .. }),
        "{err:?}"
    );
    assert!(err.is_retryable());
    let view = sim.state().card("1").unwrap();
    assert_eq!(view.stop_calls, 3, "three tries in all");
    assert_eq!(view.stops_applied, 0);
    assert_eq!(view.network_status, NetworkStatus::Online);
}

#[tokio::test]
async fn a_429_with_retry_after_1_waits_about_a_second() {
    let sim = sim().await;
    register(&sim, &["1"]);
    sim.state().set_script(script(CallKind::Start, &[429]));
    let started = Instant::now();
    assert_eq!(
        client(&sim).start(CarrierId(1), "1").await,
        Ok(NetworkStatus::Online)
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(950) && elapsed < Duration::from_millis(1600),
        "{elapsed:?}"
    );
    assert_eq!(sim.state().card("1").unwrap().start_calls, 2);
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_ends_the_retries() {
    let sim = sim().await;
    register(&sim, &["1"]);
    sim.state()
        .set_faults(FaultsPatch {
            retry_after_secs: Some(30),
            ..FaultsPatch::default()
        })
        .unwrap();
    sim.state().set_script(script(CallKind::Stop, &[429]));
    let started = Instant::now();
    assert_eq!(
        client(&sim).stop(CarrierId(1), "1").await,
        Err(GatewayError::Throttled {
            retry_after: Some(Duration::from_secs(30))
        })
    );
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(sim.state().card("1").unwrap().stop_calls, 1);
}

#[tokio::test]
async fn queries_never_retry() {
    let sim = sim().await;
    register(&sim, &["1"]);
    let gw = client(&sim);
    sim.state().set_script(script(CallKind::Usage, &[503]));
    assert!(matches!(
        gw.usage(CarrierId(1), "1").await,
        Err(GatewayError::Carrier { status: 503, .. })
    ));
    sim.state().set_script(script(CallKind::Realname, &[429]));
    assert_eq!(
        gw.realname(CarrierId(1), "1").await,
        Err(GatewayError::Throttled {
            retry_after: Some(Duration::from_secs(1))
        })
    );
    sim.state()
        .set_faults(FaultsPatch {
            error_rate: Some(1.0),
            ..FaultsPatch::default()
        })
        .unwrap();
    assert!(matches!(
        gw.packages(CarrierId(1), "1").await,
        Err(GatewayError::Carrier { status: 503, .. })
    ));
    let stats = sim.state().stats();
    assert_eq!(
        (
            stats.by_call["usage"],
            stats.by_call["realname"],
            stats.by_call["packages"]
        ),
        (1, 1, 1)
    );
}

#[tokio::test]
async fn stop_start_counters_are_exact_under_16_concurrent_callers() {
    let sim = sim().await;
    register(&sim, &["1"]);
    let gw = client(&sim);
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let gw = gw.clone();
            tokio::spawn(async move {
                for j in 0..25 {
                    let r = if (i + j) % 2 == 0 {
                        gw.stop(CarrierId(1), "1").await
                    } else {
                        gw.start(CarrierId(1), "1").await
                    };
                    r.expect("call succeeds");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let v = sim.state().card("1").unwrap();
    assert_eq!(v.stop_calls + v.start_calls, 400);
    assert_eq!((v.stop_calls, v.start_calls), (200, 200));
    assert_eq!((v.stops_applied, v.starts_applied), (200, 200));
}

#[tokio::test]
async fn quota_per_sec_answers_429_beyond_the_quota() {
    let sim = sim().await;
    register(&sim, &["1"]);
    sim.state()
        .set_faults(FaultsPatch {
            quota_per_sec: Some(5),
            ..FaultsPatch::default()
        })
        .unwrap();
    let gw = client(&sim);
    // Start right after a second boundary so that the burst fits in one second.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    tokio::time::sleep(Duration::from_nanos(
        1_000_000_000 - u64::from(now.subsec_nanos()) + 10_000_000,
    ))
    .await;
    let results = futures::future::join_all((0..20).map(|_| gw.realname(CarrierId(1), "1"))).await;
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let throttled = results
        .iter()
        .filter(|r| matches!(r, Err(GatewayError::Throttled { .. })))
        .count();
    assert_eq!(ok + throttled, 20);
    // Exactly 5 when the burst fits in one second (it does unless the machine stalls for most
    // of a second); never more than the quota of the two seconds it could straddle.
    assert!((5..=10).contains(&ok), "{results:?}");
    assert_eq!(sim.state().stats().by_outcome["over_quota"], 20 - ok as u64);
}

#[tokio::test]
async fn usage_growth_is_deterministic() {
    let seeded = |seed| SimOptions {
        seed,
        ..SimOptions::default()
    };
    let (a, b) = (sim_with(seeded(7)).await, sim_with(seeded(7)).await);
    let unseeded = SimCardSpec {
        growth_mb_per_query: None,
        month_total_mb: dec!(10),
        ..SimCardSpec::new("42")
    };
    a.state().upsert_cards(vec![unseeded.clone()]).unwrap();
    b.state().upsert_cards(vec![unseeded]).unwrap();
    let growth = a.state().card("42").unwrap().growth_mb_per_query;
    let (ga, gb) = (client(&a), client(&b));
    for n in 1..=3 {
        let (ua, ub) = (
            ga.usage(CarrierId(1), "42").await.unwrap(),
            gb.usage(CarrierId(1), "42").await.unwrap(),
        );
        assert_eq!(ua, ub);
        assert_eq!(
            ua.month_total_mb,
            dec!(10) + growth * rust_decimal::Decimal::from(n)
        );
    }

    let fixed = SimCardSpec {
        month_total_mb: dec!(100),
        growth_mb_per_query: Some(dec!(2.5)),
        ..SimCardSpec::new("9")
    };
    a.state()
        .upsert_cards(vec![
            fixed,
            SimCardSpec {
                month_total_mb: dec!(7),
                ..SimCardSpec::new("0")
            },
        ])
        .unwrap();
    let totals: Vec<_> = [
        ga.usage(CarrierId(1), "9").await,
        ga.usage(CarrierId(1), "9").await,
        ga.usage(CarrierId(1), "9").await,
    ]
    .into_iter()
    .map(|u| u.unwrap().month_total_mb)
    .collect();
    assert_eq!(totals, vec![dec!(102.5), dec!(105.0), dec!(107.5)]);
    assert_eq!(
        ga.usage(CarrierId(1), "0").await.unwrap().month_total_mb,
        dec!(7)
    );
    assert_eq!(
        ga.usage(CarrierId(1), "0").await.unwrap().month_total_mb,
        dec!(7),
        "growth 0 keeps usage fixed"
    );
}

#[tokio::test]
async fn control_api_over_http() {
    let sim = sim().await;
    let ctl = SimControl::new(sim.url()).unwrap();
    let cards: Vec<_> = (0..1000)
        .map(|i| SimCardSpec::new(format!("8986{i:016}")))
        .collect();
    assert_eq!(ctl.put_cards(&cards).await.unwrap(), 1000);
    assert_eq!(sim.state().card_count(), 1000);

    let id = "89860000000000000007";
    let patched = ctl
        .patch_card(
            id,
            &SimCardPatch {
                real_name_status: Some(RealNameStatus::NotVerified),
                month_total_mb: Some(dec!(55)),
                ..SimCardPatch::default()
            },
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(patched.real_name_status, RealNameStatus::NotVerified);
    assert!(
        ctl.patch_card("missing", &SimCardPatch::default())
            .await
            .unwrap()
            .is_none()
    );
    assert!(ctl.card("missing").await.unwrap().is_none());

    let gw = client(&sim);
    assert_eq!(
        gw.realname(CarrierId(1), id).await.unwrap(),
        RealNameStatus::NotVerified
    );
    assert_eq!(
        gw.usage(CarrierId(1), id).await.unwrap().month_total_mb,
        dec!(55)
    );
    gw.stop(CarrierId(1), id).await.unwrap();
    assert_eq!(ctl.card(id).await.unwrap().unwrap().stop_calls, 1);

    let faults = ctl
        .set_faults(&FaultsPatch {
            latency_ms: Some(5),
            ..FaultsPatch::default()
        })
        .await
        .unwrap();
    assert_eq!((faults.latency_ms, faults.error_rate), (5, 0.0));
    assert_eq!(
        ctl.set_script(&script(CallKind::Start, &[503]))
            .await
            .unwrap(),
        1
    );

    let stats = ctl.stats().await.unwrap();
    assert_eq!(stats.requests, 3);
    assert_eq!(stats.cards, 1000);
    assert_eq!(stats.per_second.len(), 60);
    assert_eq!(stats.per_second.iter().map(|s| s.requests).sum::<u64>(), 3);
}

#[tokio::test]
async fn the_sim_answers_bad_input_with_json_4xx() {
    let sim = sim().await;
    let http = reqwest::Client::new();
    let url = |p: &str| format!("{}{p}", sim.url());
    let cases = [
        (reqwest::Method::POST, "/v1/cards/usage", "not json", 400),
        (
            reqwest::Method::POST,
            "/v1/cards/usage",
            r#"{"icc":"1"}"#,
            422,
        ),
        (
            reqwest::Method::POST,
            "/sim/cards",
            r#"{"cards":[{"iccid":""}]}"#,
            422,
        ),
        (
            reqwest::Method::POST,
            "/sim/cards",
            r#"{"cards":[{"iccid":"1","month":"2026-4"}]}"#,
            422,
        ),
        (
            reqwest::Method::POST,
            "/sim/cards",
            r#"{"cards":[{"iccid":"1","real_name_status":7}]}"#,
            422,
        ),
        (
            reqwest::Method::PUT,
            "/sim/faults",
            r#"{"error_rate":2}"#,
            422,
        ),
        (
            reqwest::Method::PUT,
            "/sim/faults",
            r#"{"eror_rate":0.1}"#,
            422,
        ),
        (
            reqwest::Method::PUT,
            "/sim/script",
            r#"{"fail_next":[200]}"#,
            422,
        ),
        (reqwest::Method::PATCH, "/sim/cards/nope", r#"{}"#, 404),
        (reqwest::Method::GET, "/no/such/route", "", 404),
    ];
    for (method, path, body, status) in cases {
        let resp = http
            .request(method.clone(), url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), status, "{method} {path} {body}");
        let json: serde_json::Value = resp.json().await.unwrap();
        assert!(json["error"].is_string(), "{method} {path}: {json}");
    }
    let too_many: Vec<_> = (0..100_001)
        .map(|i| SimCardSpec::new(i.to_string()))
        .collect();
    let resp = http
        .post(url("/sim/cards"))
        .json(&serde_json::json!({ "cards": too_many }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    assert_eq!(sim.state().card_count(), 0);
}
