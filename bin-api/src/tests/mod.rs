//! Router tests: the real router (`app()`), called with `oneshot`, over a real PostgreSQL
//! database and Redis key prefix of the test's own (`TestEnv`), and an in-process gateway-sim.

#![allow(clippy::unwrap_used)]

mod assets;
mod budget;
mod card_usage;
mod cards;
mod carriers;
mod configs;
mod devices;
mod foundation;
mod manual;
mod ops_alerts;
mod ops_monitoring;
mod streams;
mod ui;
mod validation;

use crate::app::app;
use crate::keys::hash_key;
use crate::state::AppState;
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use domain::ApiKeyRole;
use gateway_sim::{SimHandle, SimOptions, SimServer};
use http_body_util::BodyExt;
use polling_queue::{Keys, PollingQueueManager, QueueInspector, QueueSettings};
use serde_json::Value;
use settings::Settings;
use std::collections::HashMap;
use std::sync::Arc;
use store::Stores;
use test_support::TestEnv;
use tower::ServiceExt;

pub(crate) const ADMIN: &str = "cmp_test_admin";
pub(crate) const OPERATOR: &str = "cmp_test_operator";
pub(crate) const VIEWER: &str = "cmp_test_viewer";

/// One test's world: database, Redis prefix, gateway-sim, the router, and three keys.
#[allow(dead_code)]
pub(crate) struct World {
    pub(crate) env: TestEnv,
    pub(crate) stores: Stores,
    pub(crate) sim: SimHandle,
    pub(crate) router: Router,
    pub(crate) state: AppState,
    pub(crate) queue: PollingQueueManager,
    pub(crate) inspector: QueueInspector,
}

/// A parsed answer.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) content_type: String,
    pub(crate) body: Value,
}

impl Answer {
    /// Asserts a problem+json answer of `status` and returns its body.
    pub(crate) fn problem(&self, status: StatusCode) -> &Value {
        assert_eq!(self.status, status, "body: {}", self.body);
        assert_eq!(self.content_type, "application/problem+json");
        assert_eq!(self.body["status"], status.as_u16());
        assert!(self.body["type"].is_string() && self.body["title"].is_string());
        assert!(self.body["detail"].is_string());
        &self.body
    }

    pub(crate) fn ok(&self, status: StatusCode) -> &Value {
        assert_eq!(self.status, status, "body: {}", self.body);
        &self.body
    }
}

pub(crate) fn settings(env: &TestEnv, gateway_url: &str) -> Settings {
    let vars: HashMap<String, String> = [
        ("CMP_DATABASE_URL", env.db.url.clone()),
        ("CMP_REDIS_URL", env.redis.url.clone()),
        ("CMP_REDIS_KEY_PREFIX", env.redis.prefix.clone()),
        ("CMP_GATEWAY_URL", gateway_url.to_owned()),
        ("CMP_GATEWAY_TIMEOUT_MS", "2000".to_owned()),
        ("CMP_PROTECT_PERIOD_SECS", "3600".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    Settings::from_source(&vars).unwrap()
}

impl World {
    pub(crate) async fn new() -> World {
        let env = TestEnv::new().await.unwrap();
        let sim = SimServer::start(SimOptions::default()).await.unwrap();
        let settings = settings(&env, &sim.url());
        let redis = env.redis.pool().await.unwrap();
        let (state, configs) =
            crate::components::state(&settings, env.db.conn.clone(), redis.clone(), None).unwrap();
        configs.refresh().await.unwrap();
        let stores = Stores::new(env.db.conn.clone());
        for (name, role, key) in [
            ("admin", ApiKeyRole::Admin, ADMIN),
            ("operator", ApiKeyRole::Operator, OPERATOR),
            ("viewer", ApiKeyRole::Viewer, VIEWER),
        ] {
            stores
                .api_keys
                .insert(name, role, &hash_key(key))
                .await
                .unwrap();
        }
        let keys = Keys::new(env.redis.prefix.clone());
        let queue = PollingQueueManager::new(
            redis.clone(),
            keys.clone(),
            QueueSettings::default(),
            Arc::new(domain::SystemClock),
        );
        let inspector = QueueInspector::new(redis, keys, 16);
        let router = app(state.clone(), Router::new());
        World {
            env,
            stores,
            sim,
            router,
            state,
            queue,
            inspector,
        }
    }

    /// Sends a request with `key` (None: no Authorization header) and an optional JSON body.
    pub(crate) async fn call(
        &self,
        method: Method,
        uri: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(k) = key {
            req = req.header(header::AUTHORIZATION, format!("Bearer {k}"));
        }
        let body = match body {
            Some(v) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(serde_json::to_vec(&v).unwrap())
            }
            None => Body::empty(),
        };
        self.send(req.body(body).unwrap()).await
    }

    pub(crate) async fn send(&self, req: Request<Body>) -> Answer {
        let response = self.router.clone().oneshot(req).await.unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Answer {
            status,
            content_type,
            body,
        }
    }

    pub(crate) async fn get(&self, uri: &str, key: &str) -> Answer {
        self.call(Method::GET, uri, Some(key), None).await
    }

    pub(crate) async fn post(&self, uri: &str, key: &str, body: Value) -> Answer {
        self.call(Method::POST, uri, Some(key), Some(body)).await
    }

    /// Rows of `tb_admin_audit_log`, newest first.
    pub(crate) async fn audit(&self) -> Vec<domain::AdminAudit> {
        self.stores
            .admin_audit
            .list(domain::store::Page::new(1, 500))
            .await
            .unwrap()
            .items
    }
}

/// An "everything" config: every type scheduled at `interval` seconds.
pub(crate) async fn config_everything(w: &World, interval: u32) -> i64 {
    let a = w
        .post(
            "/api/admin/polling-configs",
            ADMIN,
            serde_json::json!({"name": "everything", "priority": 100,
                "realname_interval_secs": interval, "carddata_interval_secs": interval,
                "package_interval_secs": interval, "protect_interval_secs": interval}),
        )
        .await;
    a.ok(StatusCode::CREATED)["id"].as_i64().unwrap()
}

pub(crate) fn iccid(i: u64) -> String {
    format!("8986{i:016}")
}

/// A card created through the API, known to gateway-sim too.
pub(crate) async fn card(w: &World, i: u64, extra: Value) -> i64 {
    let mut body = serde_json::json!({"iccid": iccid(i), "carrier_id": 1, "real_name_status": 1});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    w.sim
        .state()
        .upsert_cards(vec![gateway_sim::SimCardSpec::new(iccid(i))])
        .unwrap();
    let a = w.post("/api/admin/cards", ADMIN, body).await;
    a.ok(StatusCode::CREATED)["id"].as_i64().unwrap()
}

/// The card's scores in the four queues.
pub(crate) async fn scores(w: &World, card: i64) -> [Option<f64>; 4] {
    w.inspector.scores(domain::CardId(card)).await.unwrap()
}
