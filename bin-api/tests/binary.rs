//! End to end with the real `cmp-api` binary: `keys create`, `serve` against a test's own
//! database, Redis prefix and an in-process gateway-sim, driven over HTTP.

#![allow(clippy::unwrap_used)]

use domain::{CardId, DeviceId, TaskType};
use gateway_sim::{SimCardSpec, SimHandle, SimOptions, SimServer};
use polling_config::PollingConfigManager;
use polling_queue::{Keys, QueueInspector};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};
use store::Stores;
use test_support::TestEnv;
use tokio::process::{Child, Command};

struct Api {
    env: TestEnv,
    sim: SimHandle,
    child: Child,
    base: String,
    key: String,
    http: reqwest::Client,
    inspector: QueueInspector,
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn command(env: &TestEnv, sim: &SimHandle, bind: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmp-api"));
    c.env("CMP_DATABASE_URL", &env.db.url)
        .env("CMP_REDIS_URL", &env.redis.url)
        .env("CMP_REDIS_KEY_PREFIX", &env.redis.prefix)
        .env("CMP_GATEWAY_URL", sim.url())
        .env("CMP_API_BIND", bind)
        .env("CMP_LOG", "warn")
        .stdin(Stdio::null());
    c
}

impl Api {
    async fn start() -> Api {
        let env = TestEnv::new().await.unwrap();
        let sim = SimServer::start(SimOptions::default()).await.unwrap();
        let bind = format!("127.0.0.1:{}", free_port());
        let out = command(&env, &sim, &bind)
            .args(["keys", "create", "--name", "ops", "--role", "admin"])
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let key = stdout.lines().last().unwrap().trim().to_owned();
        let child = command(&env, &sim, &bind)
            .arg("serve")
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let base = format!("http://{bind}");
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = http.get(format!("{base}/readyz")).send().await
                && r.status().is_success()
            {
                break;
            }
            assert!(Instant::now() < deadline, "cmp-api did not become ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let inspector = QueueInspector::new(
            env.redis.pool().await.unwrap(),
            Keys::new(env.redis.prefix.clone()),
            16,
        );
        Api {
            env,
            sim,
            child,
            base,
            key,
            http,
            inspector,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}/api/admin{path}", self.base))
            .bearer_auth(&self.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let (s, v) = self.call(reqwest::Method::POST, path, Some(body)).await;
        assert!((200..300).contains(&s), "POST {path}: {s} {v}");
        v
    }

    async fn everything_config(&self) -> i64 {
        self.post(
            "/polling-configs",
            json!({"name": "everything", "priority": 100, "realname_interval_secs": 3600,
                "carddata_interval_secs": 3600, "package_interval_secs": 3600,
                "protect_interval_secs": 3600}),
        )
        .await["id"]
            .as_i64()
            .unwrap()
    }

    async fn import(&self, n: u64, device: Option<i64>) -> Vec<i64> {
        let rows: Vec<Value> = (0..n)
            .map(|i| json!({"iccid": format!("8986{i:016}"), "carrier_id": 1, "real_name_status": 1, "device_id": device}))
            .collect();
        let specs = (0..n)
            .map(|i| SimCardSpec::new(format!("8986{i:016}")))
            .collect();
        self.sim.state().upsert_cards(specs).unwrap();
        let r = self.post("/cards/import", json!({ "cards": rows })).await;
        r["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect()
    }

    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        drop(self.env);
    }
}

#[tokio::test]
async fn device_polling_status_false_empties_all_queues_of_its_cards_and_true_restores_them() {
    let api = Api::start().await;
    api.everything_config().await;
    let device = api.post("/devices", json!({"device_no": "D-1"})).await["id"]
        .as_i64()
        .unwrap();
    let cards = api.import(20, Some(device)).await;
    let (s, _) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/assets/device/{device}/polling-status"),
            Some(json!({"enable_polling": false})),
        )
        .await;
    assert_eq!(s, 200);
    for c in &cards {
        assert!(
            !api.inspector.queued_anywhere(CardId(*c)).await.unwrap(),
            "card {c} still queued"
        );
    }
    let before = chrono::Utc::now().timestamp() as f64 - 1.0;
    let (s, v) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/assets/device/{device}/polling-status"),
            Some(json!({"enable_polling": true})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let now = chrono::Utc::now().timestamp() as f64 + 1.0;
    for c in &cards {
        let scores = api.inspector.scores(CardId(*c)).await.unwrap();
        for (t, s) in TaskType::ALL.iter().zip(scores) {
            let s = s.unwrap_or_else(|| panic!("card {c} not in {t}"));
            assert!(s >= before && s <= now, "card {c} {t} not due now: {s}");
        }
    }
    api.stop().await;
}

#[tokio::test]
async fn deleting_card_500_leaves_it_in_no_queue_and_no_cache() {
    let api = Api::start().await;
    api.everything_config().await;
    let cards = api.import(500, None).await;
    assert_eq!(cards.last(), Some(&500));
    // Put it in the cache and on a manual list, as a running system would.
    let e = api
        .call(reqwest::Method::GET, "/cards/500/explain", None)
        .await;
    assert_eq!(e.0, 200);
    assert!(api.inspector.queued_anywhere(CardId(500)).await.unwrap());
    let (s, _) = api.call(reqwest::Method::DELETE, "/cards/500", None).await;
    assert_eq!(s, 204);
    assert!(!api.inspector.queued_anywhere(CardId(500)).await.unwrap());
    assert!(api.inspector.scores(CardId(500)).await.unwrap()[TaskType::Protect.index()].is_none());
    assert!(!api.inspector.cached(CardId(500)).await.unwrap());
    for t in TaskType::ALL {
        assert!(!api.inspector.in_manual(CardId(500), t).await.unwrap());
    }
    let (s, v) = api.call(reqwest::Method::GET, "/cards/500", None).await;
    assert_eq!((s, v["status"].as_u64()), (404, Some(404)));
    api.stop().await;
}

#[tokio::test]
async fn a_device_stop_stops_every_card_at_the_carrier_once_and_sets_the_protect_period() {
    let api = Api::start().await;
    api.everything_config().await;
    let device = api.post("/devices", json!({"device_no": "D-1"})).await["id"]
        .as_i64()
        .unwrap();
    let cards = api.import(5, Some(device)).await;
    let r = api
        .post(&format!("/devices/{device}/stop"), json!({}))
        .await;
    assert_eq!(r["failed"], 0, "{r}");
    for i in 0..5u64 {
        let view = api.sim.state().card(&format!("8986{i:016}")).unwrap();
        assert_eq!((view.stop_calls, view.stops_applied), (1, 1));
    }
    let ttl = api.inspector.protect_ttl(DeviceId(device)).await.unwrap();
    let stop = ttl.stop.unwrap();
    assert!(stop > Duration::from_secs(3500) && stop <= Duration::from_secs(3600));
    assert!(ttl.start.is_none());
    let stores = Stores::new(api.env.db.conn.clone());
    for c in cards {
        let card = stores.cards.get(CardId(c)).await.unwrap().unwrap();
        assert_eq!(card.stop_reason, Some(domain::StopReason::Protect));
    }
    api.stop().await;
}

#[tokio::test]
async fn a_config_edit_reaches_another_process_within_a_second() {
    let api = Api::start().await;
    let id = api.everything_config().await;
    let stores = Stores::new(api.env.db.conn.clone());
    let other = PollingConfigManager::new(
        stores.configs.clone(),
        api.env.redis.pool().await.unwrap(),
        Keys::new(api.env.redis.prefix.clone()),
    );
    other.start().await.unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let refresher = other.spawn_refresher(shutdown.clone()).await.unwrap();
    let (s, _) = api
        .call(
            reqwest::Method::PUT,
            &format!("/polling-configs/{id}"),
            Some(json!({"name": "everything", "priority": 100, "carddata_interval_secs": 7})),
        )
        .await;
    assert_eq!(s, 200);
    let edited = Instant::now();
    let interval = |m: &PollingConfigManager| {
        m.snapshot()
            .configs()
            .first()
            .and_then(|c| c.spec.intervals.carddata_interval_secs)
    };
    while interval(&other) != Some(7) {
        assert!(
            edited.elapsed() < Duration::from_secs(1),
            "change not seen within a second"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shutdown.cancel();
    let _ = refresher.await;
    api.stop().await;
}

#[tokio::test]
async fn documents_and_errors_over_http() {
    let api = Api::start().await;
    let doc: Value = api
        .http
        .get(format!("{}/api/openapi.json", api.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let r = api
        .http
        .get(format!("{}/api/admin/cards", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let r = api
        .http
        .get(format!("{}/api/docs/", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    api.stop().await;
}
