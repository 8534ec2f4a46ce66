//! `/readyz`: ready means PostgreSQL and Redis answer and every probe the binary added (the
//! queues are initialised) passes. The answer is 200 or 503 with a JSON body naming each part:
//! `{"ready": false, "checks": {"postgres": "ok", "redis": "ok", "queues": "…why…"}}`.

use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand, Value};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How long each part may take to answer.
const PART_TIMEOUT: Duration = Duration::from_secs(2);

type ProbeFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
type Probe = Arc<dyn Fn() -> ProbeFuture + Send + Sync>;

/// Redis answers: a single server answers `PING`; on a cluster every node the client is
/// connected to answers `CLUSTER INFO` with `cluster_state:ok`. A primary that died and was not
/// replaced (or any slot no primary serves) turns every node's state to `fail` once the cluster
/// noticed, so one node's `PING` would not be the truth: commands on some keys fail then.
async fn redis_ready(redis: &Pool) -> Result<(), String> {
    let client = redis.next();
    if !client.is_clustered() {
        return client
            .ping::<String>(None)
            .await
            .map(drop)
            .map_err(|e| e.to_string());
    }
    let nodes = client.active_connections();
    if nodes.is_empty() {
        return Err("connected to no cluster node".to_owned());
    }
    let cluster_info = CustomCommand::new_static("CLUSTER INFO", ClusterHash::Random, false);
    let answers = futures::future::join_all(nodes.into_iter().map(|server| {
        let node = client.with_cluster_node(server.clone());
        let cmd = cluster_info.clone();
        async move {
            let info: Result<String, _> = node.custom(cmd, Vec::<Value>::new()).await;
            match info {
                Ok(info) if info.lines().any(|l| l.trim() == "cluster_state:ok") => Ok(()),
                Ok(_) => Err(format!("{server}: cluster_state is not ok")),
                Err(e) => Err(format!("{server}: {e}")),
            }
        }
    }))
    .await;
    let failed: Vec<String> = answers.into_iter().filter_map(Result::err).collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// What `/readyz` checks.
#[derive(Clone)]
pub struct Readiness {
    db: DatabaseConnection,
    redis: Pool,
    /// Added by the binary: `(part name, check)`, e.g. `("queues", initialised?)`.
    probes: Vec<(&'static str, Probe)>,
    /// Added by the binary: `(name, what to show)`, e.g. `("carriers", each carrier's health)`.
    details: Vec<(&'static str, Detail)>,
}

type Detail = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// The answer of every part: `Ok` or why it is not ready; and the details that inform without
/// deciding readiness (a carrier refusing our credentials does not make a node unable to poll
/// the others).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadinessReport {
    pub parts: Vec<(&'static str, Result<(), String>)>,
    pub details: Vec<(&'static str, serde_json::Value)>,
}

impl ReadinessReport {
    pub fn ready(&self) -> bool {
        self.parts.iter().all(|(_, r)| r.is_ok())
    }

    /// The `/readyz` body.
    pub fn to_json(&self) -> serde_json::Value {
        let checks: serde_json::Map<String, serde_json::Value> = self
            .parts
            .iter()
            .map(|(name, result)| {
                let value = match result {
                    Ok(()) => "ok".to_owned(),
                    Err(why) => why.clone(),
                };
                ((*name).to_owned(), serde_json::Value::String(value))
            })
            .collect();
        if self.details.is_empty() {
            return serde_json::json!({ "ready": self.ready(), "checks": checks });
        }
        let detail: serde_json::Map<String, serde_json::Value> = self
            .details
            .iter()
            .map(|(name, v)| ((*name).to_owned(), v.clone()))
            .collect();
        serde_json::json!({ "ready": self.ready(), "checks": checks, "detail": detail })
    }
}

impl Readiness {
    /// PostgreSQL and Redis only; add the binary's own parts with [`with_probe`](Self::with_probe).
    pub fn new(db: DatabaseConnection, redis: Pool) -> Self {
        Self {
            db,
            redis,
            probes: Vec::new(),
            details: Vec::new(),
        }
    }

    /// Adds a detail shown under `detail.{name}` of `/readyz` that never makes it 503.
    pub fn with_detail<F>(mut self, name: &'static str, detail: F) -> Self
    where
        F: Fn() -> serde_json::Value + Send + Sync + 'static,
    {
        self.details.push((name, Arc::new(detail)));
        self
    }

    /// Adds a part: ready only when `probe` answers `Ok` within two seconds.
    pub fn with_probe<F, Fut>(mut self, name: &'static str, probe: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.probes
            .push((name, Arc::new(move || Box::pin(probe()) as ProbeFuture)));
        self
    }

    /// Asks every part (concurrently).
    pub async fn report(&self) -> ReadinessReport {
        let db = self.db.clone();
        let redis = self.redis.clone();
        let mut names = vec!["postgres", "redis"];
        let mut checks: Vec<ProbeFuture> = vec![
            Box::pin(async move {
                db.execute_unprepared("SELECT 1")
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }),
            Box::pin(async move { redis_ready(&redis).await }),
        ];
        for (name, probe) in &self.probes {
            names.push(name);
            checks.push(probe());
        }
        let results = futures::future::join_all(checks.into_iter().map(|check| async move {
            tokio::time::timeout(PART_TIMEOUT, check)
                .await
                .unwrap_or_else(|_| Err("timeout".to_owned()))
        }))
        .await;
        ReadinessReport {
            parts: names.into_iter().zip(results).collect(),
            details: self.details.iter().map(|(n, d)| (*n, d())).collect(),
        }
    }

    /// `Ok` when every part is ready; else the first reason, prefixed with its part.
    pub async fn check(&self) -> Result<(), String> {
        let report = self.report().await;
        match report.parts.into_iter().find(|(_, r)| r.is_err()) {
            Some((name, Err(why))) => Err(format!("{name}: {why}")),
            _ => Ok(()),
        }
    }
}
