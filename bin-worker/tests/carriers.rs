//! A real `cmp-worker` process polling its cards through a real platform's adapter (OneLink on
//! gateway-sim), following the carrier's configuration without a restart, reporting refused
//! credentials on `/readyz`, and never writing a credential or a token into its logs.

mod common;

use common::*;
use domain::{CarrierAccountInput, CarrierId, CarrierLimits, CarrierProtocol, Credentials};
use gateway_sim::SimAccount;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

const WRONG_PASSWORD: &str = "S3cr3t-Wrong-OneLink-PW";

/// Carrier 1 on the simulated OneLink. Its batch queries are assumed calls
/// (`docs/carriers/onelink.md`), off by default at both ends: turned on here, so that the
/// node's budget figures count 100 cards a call.
fn onelink(w: &World, credentials: Credentials) -> CarrierAccountInput {
    let p = CarrierProtocol::OneLink;
    w.sim.state().set_account(
        p,
        gateway_sim::SimAccountPatch {
            assumed_calls: Some(true),
            ..Default::default()
        },
    );
    CarrierAccountInput {
        carrier_id: CarrierId(1),
        name: "China Mobile (simulated)".to_owned(),
        protocol: p,
        base_url: w.sim.url_of(p),
        credentials: Some(credentials),
        limits: CarrierLimits {
            assumed_calls: domain::AssumedCalls::all(),
            ..p.default_limits()
        },
        enabled: true,
    }
}

/// `detail.carriers."1".state` of the worker's `/readyz`.
async fn carrier_state(addr: &str) -> Option<String> {
    let body = http_get(addr, "/readyz").await?;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["detail"]["carriers"]["1"]["state"]
        .as_str()
        .map(str::to_owned)
}

#[tokio::test]
async fn a_worker_polls_through_onelink_follows_a_credentials_change_and_logs_no_secret()
-> anyhow::Result<()> {
    let w = world(20, 2, 1).await?;
    let account = SimAccount::default_for(CarrierProtocol::OneLink);
    let good = account
        .credentials
        .iter()
        .fold(Credentials::new(), |c, (k, v)| c.with(k, v));
    w.stores.carriers.insert(&onelink(&w, good)).await?;
    w.all_due_now().await?;

    let addr = free_port()?;
    let log = tempfile_path("onelink-worker.log");
    let mut worker = Command::new(env!("CARGO_BIN_EXE_cmp-worker"))
        .arg("run")
        .env("CMP_DATABASE_URL", &w.env.db.url)
        .env("CMP_DATABASE_MAX_CONNECTIONS", "8")
        .env("CMP_REDIS_URL", &w.env.redis.url)
        .env("CMP_REDIS_KEY_PREFIX", &w.env.redis.prefix)
        // The default gateway is a closed port: every poll that works went through OneLink.
        .env("CMP_GATEWAY_URL", "http://127.0.0.1:9")
        .env("CMP_WORKER_BIND", &addr)
        .env("CMP_SCHEDULER_TICK_MS", "200")
        .env("CMP_RETRY_INTERVAL_SECS", "2")
        .env(
            "CMP_LOG",
            "debug,sqlx=warn,fred=warn,hyper=warn,reqwest=debug",
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()?;

    let polled = eventually(Duration::from_secs(120), || async {
        Ok(polled_at_least(&w, 1) == w.cards.len())
    })
    .await?;
    assert!(
        polled,
        "every card polled through OneLink: {}",
        polled_at_least(&w, 1)
    );
    assert!(
        eventually(Duration::from_secs(30), || async {
            Ok(carrier_state(&addr).await.as_deref() == Some("ok"))
        })
        .await?,
        "carrier 1 ok on /readyz"
    );

    // The node adds carrier 1's calls to the cluster's per-minute counts (with its health,
    // every 5 s), and its `carrier_budget` job, run at start, published the carrier's figures:
    // 20 cards every 2 s, real-name and usage 100 a call, packages 1: 0.1 + 0.1 + 10 calls/s
    // against OneLink's 20.
    let redis = w.env.redis.pool().await?;
    let keys = polling_queue::Keys::new(w.env.redis.prefix.clone());
    let calls = polling_queue::CarrierCalls::new(redis.clone(), keys.clone());
    assert!(
        eventually(Duration::from_secs(30), || async {
            let ahead = chrono::Utc::now() + chrono::Duration::minutes(1);
            let counted = calls.per_carrier(ahead, 5).await?;
            Ok(counted.get(&CarrierId(1)).copied().unwrap_or(0) > 0)
        })
        .await?,
        "carrier 1's calls counted"
    );
    let report = polling_queue::CarrierBudgetBoard::new(redis, keys)
        .read()
        .await?
        .ok_or_else(|| anyhow::anyhow!("no budget figures published"))?;
    let one = report
        .carriers
        .iter()
        .find(|c| c.carrier_id == CarrierId(1))
        .ok_or_else(|| anyhow::anyhow!("carrier 1 in {report:?}"))?;
    assert_eq!(
        (one.allowed_calls_per_sec, one.batch_size),
        (Some(20.0), 100)
    );
    assert!((one.demand_calls_per_sec - 10.2).abs() < 1e-9, "{one:?}");
    assert_eq!(one.round_ratio, 1.0);
    let metrics = http_get(&addr, "/metrics").await.unwrap_or_default();
    assert_eq!(
        metric_sum(
            &metrics,
            "cmp_carrier_budget_allowed_calls_per_second",
            "carrier=\"1\""
        ),
        20.0,
        "the job's node exports the gauges"
    );

    // The operator types a wrong password: within the follow period the worker uses it, every
    // call is refused, and /readyz says so while the node stays ready.
    let wrong = Credentials::new()
        .with("appid", account.credentials["appid"].clone())
        .with("password", WRONG_PASSWORD);
    w.stores.carriers.update(&onelink(&w, wrong)).await?;
    assert!(
        eventually(Duration::from_secs(60), || async {
            Ok(carrier_state(&addr).await.as_deref() == Some("auth_failed"))
        })
        .await?,
        "carrier 1 auth_failed on /readyz"
    );
    assert_eq!(
        http_status(&addr, "/readyz").await,
        Some(200),
        "still ready"
    );

    let status = terminate(&mut worker).await?;
    assert!(status.success(), "clean exit: {status}");
    let text = std::fs::read_to_string(&log)?;
    assert!(text.contains("carrier"), "the log was written");
    for secret in [account.credentials["password"].as_str(), WRONG_PASSWORD] {
        assert!(
            !text.contains(secret),
            "a credential is in the worker's log ({})",
            log.display()
        );
    }
    if std::env::var_os("CMP_TEST_KEEP_LOG").is_none() {
        let _ = std::fs::remove_file(&log);
    }
    Ok(())
}

/// The megabytes recorded for the card (`tb_data_usage_record`).
async fn recorded_mb(w: &World, card: domain::CardId) -> anyhow::Result<rust_decimal::Decimal> {
    use sea_orm::ConnectionTrait;
    let row = w
        .env
        .db
        .conn
        .query_one_raw(sea_orm::Statement::from_sql_and_values(
            sea_orm::DatabaseBackend::Postgres,
            "SELECT COALESCE(SUM(delta_mb), 0) AS s FROM tb_data_usage_record WHERE iot_card_id = $1",
            [card.get().into()],
        ))
        .await?
        .ok_or_else(|| anyhow::anyhow!("no sum"))?;
    Ok(row.try_get::<rust_decimal::Decimal>("", "s")?)
}

/// kill -9 of a worker whose batch calls are in flight: the cards of those batches come due
/// again when their lease ends, another worker polls them, and every card's usage is counted
/// once (the recorded megabytes equal the carrier's month total).
#[tokio::test]
async fn a_worker_killed_mid_batch_loses_no_card_and_counts_usage_once() -> anyhow::Result<()> {
    let w = world(60, 3600, 5).await?;
    let account = SimAccount::default_for(CarrierProtocol::OneLink);
    let creds = account
        .credentials
        .iter()
        .fold(Credentials::new(), |c, (k, v)| c.with(k, v));
    w.stores.carriers.insert(&onelink(&w, creds)).await?;
    w.all_due_now().await?;
    // The platform answers after 3 s: the batches are in flight when the worker dies.
    w.sim
        .state()
        .set_faults(gateway_sim::FaultsPatch {
            latency_ms: Some(3000),
            ..Default::default()
        })
        .map_err(anyhow::Error::msg)?;
    let settings = [
        ("CMP_GATEWAY_URL", "http://127.0.0.1:9"),
        ("CMP_LEASE_SECS", "3"),
        ("CMP_BATCH_LINGER_MS", "50"),
    ];
    let mut first = spawn_worker(&w, &settings)?;
    let in_flight = eventually(Duration::from_secs(60), || async {
        Ok(w.sim_calls("usage") >= 1)
    })
    .await?;
    assert!(in_flight, "a usage batch reached the carrier");
    first.start_kill()?;
    first.wait().await?;
    let asked = w.sim_calls("usage");
    assert!(
        asked < w.cards.len() as u64 / 2,
        "batched: {asked} usage calls for {} cards",
        w.cards.len()
    );

    w.sim
        .state()
        .set_faults(gateway_sim::FaultsPatch {
            latency_ms: Some(0),
            ..Default::default()
        })
        .map_err(anyhow::Error::msg)?;
    let mut second = spawn_worker(&w, &settings)?;
    let all_written = eventually(Duration::from_secs(90), || async {
        for (i, card) in w.cards.iter().enumerate() {
            let c = w.stores.cards.get(*card).await?;
            let total = w.sim.state().card(&iccid(i)).map(|s| s.month_total_mb);
            if c.map(|c| c.usage.current_month_usage_mb) != total
                || total.is_none_or(|t| t.is_zero())
            {
                return Ok(false);
            }
        }
        Ok(true)
    })
    .await?;
    assert!(all_written, "every card polled after the kill");
    assert!(terminate(&mut second).await?.success());
    for (i, card) in w.cards.iter().enumerate() {
        let total = w.sim.state().card(&iccid(i)).map(|s| s.month_total_mb);
        assert_eq!(
            Some(recorded_mb(&w, *card).await?),
            total,
            "card {card:?}: counted once"
        );
    }
    assert!(all_queued(&w).await?, "every card in each of its queues");
    Ok(())
}

fn tempfile_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{}-{name}", std::process::id()))
}
