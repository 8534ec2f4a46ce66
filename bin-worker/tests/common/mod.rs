//! A small fleet in a test's own database and Redis prefix, an in-process gateway-sim, and
//! `cmp-worker run` spawned as a real process against them.

#![allow(dead_code, unreachable_pub)]

use chrono::{Duration as ChronoDuration, Utc};
use domain::{
    CardCategory, CardId, CarrierId, Intervals, NetworkStatus, NewCard, NewPackageUsage,
    PackageOwner, PackageStatus, PollingConfigInput, RealNameStatus, ResetCycle, TaskType,
};
use gateway_sim::{SimCardSpec, SimHandle, SimOptions, SimServer};
use polling_queue::{Keys, PollingQueueManager, QueueSettings};
use rust_decimal::Decimal;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use store::Stores;
use test_support::TestEnv;
use tokio::process::{Child, Command};

pub struct World {
    pub env: TestEnv,
    pub stores: Stores,
    pub sim: SimHandle,
    pub queue: PollingQueueManager,
    pub cards: Vec<CardId>,
}

pub fn iccid(i: usize) -> String {
    format!("8986{i:016}")
}

/// `n` standalone, real-named, online cards, each with a 1 GB package, in the database and in
/// gateway-sim (usage growing by `growth` MB a query), and one config scheduling every type
/// at `interval_secs`.
pub async fn world(n: usize, interval_secs: u32, growth: i64) -> anyhow::Result<World> {
    world_in(TestEnv::new().await?, n, interval_secs, growth).await
}

/// [`world`] in a given environment (e.g. one whose Redis is a test's own cluster).
pub async fn world_in(
    env: TestEnv,
    n: usize,
    interval_secs: u32,
    growth: i64,
) -> anyhow::Result<World> {
    let stores = Stores::new(env.db.conn.clone());
    let sim = SimServer::start(SimOptions::default()).await?;
    stores
        .configs
        .insert(&PollingConfigInput {
            name: "everything".to_owned(),
            priority: 100,
            enabled: true,
            card_condition: None,
            card_category: None,
            carrier_id: None,
            intervals: Intervals {
                realname_interval_secs: Some(interval_secs),
                carddata_interval_secs: Some(interval_secs),
                package_interval_secs: Some(interval_secs),
                protect_interval_secs: Some(interval_secs),
            },
        })
        .await?;
    let new: Vec<NewCard> = (0..n)
        .map(|i| NewCard {
            iccid: iccid(i),
            msisdn: None,
            carrier_id: CarrierId(1),
            card_category: CardCategory::Normal,
            status: 1,
            real_name_status: RealNameStatus::Verified,
            network_status: NetworkStatus::Online,
            enable_polling: true,
            device_id: None,
        })
        .collect();
    let cards = stores.cards.insert_bulk(&new).await?;
    let now = Utc::now();
    let usages: Vec<NewPackageUsage> = cards
        .iter()
        .map(|c| package(PackageOwner::Card(*c), Decimal::from(1024), now))
        .collect();
    stores.packages.create_usages_bulk(&usages).await?;
    let specs: Vec<SimCardSpec> = (0..n)
        .map(|i| {
            let mut s = SimCardSpec::new(iccid(i));
            s.growth_mb_per_query = Some(Decimal::from(growth));
            s
        })
        .collect();
    sim.state()
        .upsert_cards(specs)
        .map_err(anyhow::Error::msg)?;
    let queue = PollingQueueManager::new(
        env.redis.pool().await?,
        Keys::new(env.redis.prefix.clone()),
        QueueSettings {
            shard_count: 16,
            lease: Duration::from_secs(300),
        },
        Arc::new(domain::SystemClock),
    );
    Ok(World {
        env,
        stores,
        sim,
        queue,
        cards,
    })
}

impl World {
    /// Puts every card in every queue due now (what the lifecycle does for new cards), so a
    /// test does not wait for the initializer's spread of the first round.
    pub async fn all_due_now(&self) -> anyhow::Result<()> {
        let now = Utc::now();
        let entries: Vec<_> = self.cards.iter().map(|c| (*c, now)).collect();
        for task in TaskType::ALL {
            self.queue.requeue_many(task, &entries).await?;
        }
        Ok(())
    }

    /// Requests the sim answered for one call kind (`usage`, `realname`, `packages`, ...).
    pub fn sim_calls(&self, call: &str) -> u64 {
        self.sim
            .state()
            .stats()
            .by_call
            .get(call)
            .copied()
            .unwrap_or(0)
    }
}

pub fn package(
    owner: PackageOwner,
    limit_mb: Decimal,
    now: chrono::DateTime<Utc>,
) -> NewPackageUsage {
    NewPackageUsage {
        owner,
        package_id: None,
        external_id: None,
        status: PackageStatus::Active,
        data_limit_mb: Some(limit_mb),
        virtual_ratio: Decimal::ONE,
        used_mb: Decimal::ZERO,
        activate_on_realname: false,
        activated_at: Some(now - ChronoDuration::days(1)),
        expires_at: Some(now + ChronoDuration::days(30)),
        reset_cycle: ResetCycle::None,
        next_reset_at: None,
    }
}

/// Spawns `cmp-worker run` against the world; `extra` overrides settings.
pub fn spawn_worker(w: &World, extra: &[(&str, &str)]) -> anyhow::Result<Child> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cmp-worker"));
    cmd.arg("run")
        .env("CMP_DATABASE_URL", &w.env.db.url)
        .env("CMP_DATABASE_MAX_CONNECTIONS", "8")
        .env("CMP_REDIS_URL", &w.env.redis.url)
        .env("CMP_REDIS_KEY_PREFIX", &w.env.redis.prefix)
        .env("CMP_GATEWAY_URL", w.sim.url())
        .env("CMP_WORKER_BIND", "127.0.0.1:0")
        .env("CMP_SCHEDULER_TICK_MS", "200")
        .env("CMP_RETRY_INTERVAL_SECS", "2")
        .env(
            "CMP_LOG",
            std::env::var("CMP_TEST_WORKER_LOG").unwrap_or_else(|_| "warn".to_owned()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    Ok(cmd.spawn()?)
}

/// The status code of `GET path` on `addr` (e.g. the worker's `/readyz`); `None` when it does
/// not answer.
pub async fn http_status(addr: &str, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.ok()?;
    answer.split_whitespace().nth(1)?.parse().ok()
}

/// Polls `cond` every 100 ms until it holds or `within` passes.
pub async fn eventually<F, Fut>(within: Duration, mut cond: F) -> anyhow::Result<bool>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if cond().await? {
            return Ok(true);
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Cards (of `w.cards`) the sim has answered at least `min` usage queries for.
pub fn polled_at_least(w: &World, min: u32) -> usize {
    (0..w.cards.len())
        .filter(|i| {
            w.sim
                .state()
                .card(&iccid(*i))
                .is_some_and(|c| c.usage_queries >= min)
        })
        .count()
}

/// Every card has exactly one entry in each of the four queues (invariant 1).
pub async fn all_queued(w: &World) -> anyhow::Result<bool> {
    for task in TaskType::ALL {
        if w.queue.get_total_queue_depth(task).await? != w.cards.len() as u64 {
            return Ok(false);
        }
    }
    for c in &w.cards {
        for task in TaskType::ALL {
            if w.queue.score_of(*c, task).await?.is_none() {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

pub async fn terminate(child: &mut Child) -> anyhow::Result<std::process::ExitStatus> {
    let pid = child
        .id()
        .ok_or_else(|| anyhow::anyhow!("worker already exited"))?;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -TERM failed");
    Ok(child.wait().await?)
}

/// A free local address for `CMP_WORKER_BIND`.
pub fn free_port() -> anyhow::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.to_string())
}

/// `GET path` on `addr`: the answer's body, or `None` while nothing answers.
pub async fn http_get(addr: &str, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.ok()?;
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
}

/// The sum of the Prometheus samples of `name` whose labels contain `label` (e.g.
/// `kind="missing"`; empty: every sample), from a `/metrics` text.
pub fn metric_sum(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter(|l| l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
