//! The batch status change has no trait method yet: it is tested here, on the adapter type,
//! against the simulator (`docs/carriers/onelink.md`, section 10.3).

use super::batch::{BatchChange, BatchChangeState};
use super::wire::{network_of_word, realname_of_word};
use super::*;
use chrono::{TimeZone, Utc};
use domain::{CarrierLimits, CarrierProtocol, Credentials, ManualClock, SystemClock};
use gateway_sim::{SimAccount, SimAccountPatch, SimCardSpec, SimHandle, SimOptions, SimServer};

const P: CarrierProtocol = CarrierProtocol::OneLink;

fn account(base_url: String, limits: CarrierLimits) -> CarrierAccount {
    let credentials = SimAccount::default_for(P)
        .credentials
        .into_iter()
        .fold(Credentials::new(), |c, (k, v)| c.with(k, v));
    CarrierAccount {
        carrier_id: CarrierId(7),
        name: "China Mobile".into(),
        protocol: P,
        base_url,
        credentials,
        limits,
        enabled: true,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

async fn sim_and_adapter(limits: CarrierLimits) -> (SimHandle, OneLink) {
    let sim = SimServer::start(SimOptions::default()).await.unwrap();
    let ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, Arc::new(SystemClock));
    let gw = OneLink::new(&account(sim.url_of(P), limits), &ctx).unwrap();
    (sim, gw)
}

async fn wait_done(gw: &OneLink, change: &BatchChange) -> Vec<Result<NetworkStatus, GatewayError>> {
    for _ in 0..5 {
        match gw.batch_change_result(change).await.unwrap() {
            BatchChangeState::Pending => continue,
            BatchChangeState::Done(r) => return r,
        }
    }
    panic!("the job never finished");
}

#[test]
fn onelink_5_2_transid_is_appid_beijing_stamp_and_an_8_digit_sequence() {
    // 2026-03-31 17:00:05 UTC is 2026-04-01 01:00:05 in Beijing.
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 3, 31, 17, 0, 5).unwrap());
    let ctx = AdapterContext::new(chrono_tz::UTC, Arc::new(clock));
    let gw = OneLink::new(
        &account("http://127.0.0.1:9".into(), P.default_limits()),
        &ctx,
    )
    .unwrap();
    let a = gw.transid();
    let b = gw.transid();
    let prefix = "sim-onelink-appid20260401010005";
    assert!(a.starts_with(prefix), "{a}");
    assert_eq!(a.len(), prefix.len() + 8);
    assert!(a[prefix.len()..].bytes().all(|c| c.is_ascii_digit()));
    assert_ne!(a, b, "the sequence moves on");
    assert_eq!(gw.month(), NaiveDate::from_ymd_opt(2026, 4, 1).unwrap());
}

#[tokio::test]
async fn onelink_5_3_the_adapter_prints_no_credential_nor_token() {
    let (sim, gw) = sim_and_adapter(P.default_limits()).await;
    let token = gw.tokens.get(|| gw.fetch_token()).await.unwrap();
    let shown = format!("{gw:?}");
    assert!(!shown.contains(&token), "{shown}");
    assert!(!shown.contains("sim-onelink-password") && !shown.contains("sim-onelink-appid"));
    sim.shutdown().await.unwrap();
}

#[test]
fn onelink_9_status_table() {
    assert_eq!(network_of_word("2"), Ok(Some(NetworkStatus::Online)));
    assert_eq!(network_of_word("4"), Ok(Some(NetworkStatus::Stopped)));
    assert_eq!(network_of_word("00"), Ok(Some(NetworkStatus::Online)));
    assert_eq!(network_of_word("02"), Ok(Some(NetworkStatus::Stopped)));
    assert_eq!(network_of_word("99"), Ok(None));
    assert_eq!(network_of_word("3"), Err(()));
    assert_eq!(network_of_word("05"), Err(()));
    assert_eq!(realname_of_word("1"), Some(RealNameStatus::Verified));
    assert_eq!(realname_of_word("0"), Some(RealNameStatus::NotVerified));
    assert_eq!(realname_of_word("2"), None);
}

#[tokio::test]
async fn onelink_10_3_batch_status_change_is_a_job_with_a_result_per_card() {
    let (sim, gw) = sim_and_adapter(P.default_limits()).await;
    sim.state()
        .upsert_cards(vec![
            SimCardSpec::new("898600S1"),
            SimCardSpec::new("898600S2"),
            SimCardSpec {
                network_status: NetworkStatus::Stopped,
                ..SimCardSpec::new("898600S3")
            },
        ])
        .unwrap();
    let cards: Vec<String> = ["898600S1", "unknown-card", "898600S2", "898600S3"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let change = gw
        .change_status_batch(&cards, NetworkStatus::Stopped)
        .await
        .unwrap();
    assert!(!change.job_id.is_empty());
    // The simulator answers the first result query "in progress".
    assert_eq!(
        gw.batch_change_result(&change).await.unwrap(),
        BatchChangeState::Pending
    );
    let results = wait_done(&gw, &change).await;
    assert_eq!(results[0], Ok(NetworkStatus::Stopped));
    assert_eq!(results[1], Err(GatewayError::NotFound));
    assert_eq!(results[2], Ok(NetworkStatus::Stopped));
    assert!(
        matches!(&results[3], Err(GatewayError::Carrier { body, .. }) if body.contains("12035")),
        "already stopped: {:?}",
        results[3]
    );
    for (iccid, stops) in [("898600S1", 1), ("898600S2", 1), ("898600S3", 0)] {
        let v = sim.state().card(iccid).unwrap();
        assert_eq!(v.network_status, NetworkStatus::Stopped);
        assert_eq!((v.stop_calls, v.stops_applied), (1, stops), "{iccid}");
    }

    // Within the lock window the platform refuses the whole batch: nothing changes.
    let again = gw
        .change_status_batch(&cards[..1], NetworkStatus::Online)
        .await
        .unwrap_err();
    assert!(
        matches!(
            again,
            GatewayError::ChangeLocked {
                retry_after: Some(_),
                ..
            }
        ),
        "{again:?}"
    );
    let v = sim.state().card("898600S1").unwrap();
    assert_eq!((v.start_calls, v.starts_applied), (1, 0), "not retried");
    assert_eq!(v.network_status, NetworkStatus::Stopped);

    // Without the lock, the resume goes through.
    sim.state().set_account(
        P,
        SimAccountPatch {
            change_lock_secs: Some(0),
            ..SimAccountPatch::default()
        },
    );
    let resume = gw
        .change_status_batch(&cards[..1], NetworkStatus::Online)
        .await
        .unwrap();
    assert_eq!(
        wait_done(&gw, &resume).await,
        vec![Ok(NetworkStatus::Online)]
    );
    assert_eq!(
        sim.state().card("898600S1").unwrap().network_status,
        NetworkStatus::Online
    );

    // More cards than a batch takes are refused before any request.
    let small = CarrierLimits {
        batch_size: 1,
        ..P.default_limits()
    };
    let (_sim2, gw2) = sim_and_adapter(small).await;
    assert!(matches!(
        gw2.change_status_batch(&cards[..2], NetworkStatus::Stopped)
            .await,
        Err(GatewayError::Unsupported(_))
    ));
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn onelink_10_3_a_batch_result_naming_another_card_is_never_attributed() {
    let (sim, gw) = sim_and_adapter(P.default_limits()).await;
    sim.state()
        .upsert_cards(vec![
            SimCardSpec::new("898600T1"),
            SimCardSpec::new("898600T2"),
        ])
        .unwrap();
    let cards = vec!["898600T1".to_owned(), "898600T2".to_owned()];
    let change = gw
        .change_status_batch(&cards, NetworkStatus::Stopped)
        .await
        .unwrap();
    assert_eq!(
        gw.batch_change_result(&change).await.unwrap(),
        BatchChangeState::Pending
    );
    sim.state().set_script(gateway_sim::Script {
        fail_next: vec![gateway_sim::ScriptStep::Malformed(
            gateway_sim::Malformed::WrongIccid,
        )],
        call: None,
    });
    assert_eq!(
        gw.batch_change_result(&change).await.unwrap(),
        BatchChangeState::Done(vec![
            Err(GatewayError::MissingFromBatch),
            Ok(NetworkStatus::Stopped)
        ])
    );
    sim.shutdown().await.unwrap();
}

#[test]
fn onelink_7_3_a_blank_usage_reads_as_zero() {
    let ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, Arc::new(SystemClock));
    let gw = OneLink::new(
        &account("http://127.0.0.1:9".into(), P.default_limits()),
        &ctx,
    )
    .unwrap();
    let month = NaiveDate::from_ymd_opt(2026, 4, 1).unwrap();
    for blank in ["", " ", "  "] {
        let item = serde_json::json!({ "dataAmount": blank });
        let u = gw.usage_of("usage", &item, month).unwrap();
        assert_eq!(u.month_total_mb, rust_decimal::Decimal::ZERO, "{blank:?}");
        assert_eq!(u.month, month);
    }
    // Absent is still a missing field, and a figure still a figure.
    assert!(matches!(
        gw.usage_of("usage", &serde_json::json!({}), month),
        Err(GatewayError::Unintelligible { .. })
    ));
    let u = gw
        .usage_of("usage", &serde_json::json!({ "dataAmount": "2048" }), month)
        .unwrap();
    assert_eq!(u.month_total_mb, rust_decimal::Decimal::from(2));
}

#[tokio::test]
async fn onelink_5_4_a_ttl_of_0_is_accepted_and_the_token_never_kept() {
    let (sim, gw) = sim_and_adapter(P.default_limits()).await;
    sim.state().set_account(
        P,
        SimAccountPatch {
            token_ttl_secs: Some(0),
            ..SimAccountPatch::default()
        },
    );
    let (_, lifetime) = gw.fetch_token().await.expect("ttl 0 is a lifetime");
    assert_eq!(lifetime, std::time::Duration::ZERO);
    let a = gw.tokens.get(|| gw.fetch_token()).await.unwrap();
    let b = gw.tokens.get(|| gw.fetch_token()).await.unwrap();
    assert_ne!(a, b, "fetched again for the next request");
    sim.shutdown().await.unwrap();
}

#[test]
fn onelink_11_the_assumed_batch_queries_are_off_by_default() {
    let ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, Arc::new(SystemClock));
    let off = OneLink::new(
        &account("http://127.0.0.1:9".into(), P.default_limits()),
        &ctx,
    )
    .unwrap();
    assert!(!off.any_assumed_on());
    assert_eq!(off.batch_size(CarrierId(7)), 1);
    let limits = CarrierLimits {
        assumed_calls: domain::AssumedCalls::NONE.with(domain::AssumedCall::UsageBatch),
        ..P.default_limits()
    };
    let on = OneLink::new(&account("http://127.0.0.1:9".into(), limits), &ctx).unwrap();
    assert!(on.assumed_on(&super::batch::USAGE_BATCH));
    assert!(!on.assumed_on(&super::batch::REALNAME_BATCH));
    assert_eq!(on.batch_size(CarrierId(7)), 100);
}

/// Counts `cmp_carrier_capability_off_total` per label set; every other metric is dropped.
#[derive(Default)]
struct OffCounts(std::sync::Mutex<std::collections::HashMap<String, u64>>);

struct OffCounter {
    labels: String,
    counts: &'static OffCounts,
}

impl metrics::CounterFn for OffCounter {
    fn increment(&self, value: u64) {
        let mut counts = self.counts.0.lock().unwrap();
        *counts.entry(self.labels.clone()).or_default() += value;
    }

    fn absolute(&self, _: u64) {}
}

struct OffRecorder(&'static OffCounts);

impl metrics::Recorder for OffRecorder {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }

    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        if key.name() != "cmp_carrier_capability_off_total" {
            return metrics::Counter::noop();
        }
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        metrics::Counter::from_arc(Arc::new(OffCounter {
            labels: labels.join(","),
            counts: self.0,
        }))
    }

    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }

    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}

#[tokio::test]
async fn onelink_11_4_a_missing_interface_is_switched_off_and_counted_once() {
    static COUNTS: std::sync::OnceLock<OffCounts> = std::sync::OnceLock::new();
    let counts = COUNTS.get_or_init(OffCounts::default);
    // The only recorder of this test binary (nextest runs each test in its own process).
    let installed = metrics::set_global_recorder(OffRecorder(counts)).is_ok();

    let limits = CarrierLimits {
        assumed_calls: domain::AssumedCalls::all(),
        ..P.default_limits()
    };
    let (sim, gw) = sim_and_adapter(limits).await;
    let cards: Vec<String> = (0..5).map(|n| format!("898600W{n}")).collect();
    sim.state()
        .upsert_cards(cards.iter().map(SimCardSpec::new).collect())
        .unwrap();
    // Concurrent batch calls all meet the refusal; the switch goes off once.
    let (a, b) = tokio::join!(
        gw.usage_batch(CarrierId(7), &cards),
        gw.usage_batch(CarrierId(7), &cards)
    );
    for got in [
        a.unwrap(),
        b.unwrap(),
        gw.usage_batch(CarrierId(7), &cards).await.unwrap(),
    ] {
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(Result::is_ok), "{got:?}");
    }
    assert!(!gw.assumed_on(&super::batch::USAGE_BATCH));
    assert!(
        gw.assumed_on(&super::batch::REALNAME_BATCH),
        "only the refused one"
    );
    if installed {
        let counts = counts.0.lock().unwrap();
        assert_eq!(
            counts.get("carrier=7,call=/query/sim-data-usage/batch"),
            Some(&1),
            "{counts:?}"
        );
        assert_eq!(counts.len(), 1, "{counts:?}");
    }
    sim.shutdown().await.unwrap();
}
