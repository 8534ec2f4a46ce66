use crate::services::{REDIS_CLUSTER_VAR, redis_cluster_url, redis_url};
use crate::{run_blocking_cleanup, unique_name};
use anyhow::Context;
use fred::prelude::*;
use fred::types::scan::{ScanResult, Scanner};
use futures::{Stream, StreamExt};
use std::time::Duration;

/// An isolated key space on the test Redis (a single server or a cluster): every key the test
/// writes starts with `prefix` (the key builders of `polling-queue` take it). The keys are
/// deleted on drop.
///
/// The prefix carries no hash tag on purpose: on a cluster a test's keys spread over every
/// node, as production keys do, so a command that spans slots fails in the test with CROSSSLOT
/// instead of passing because everything happened to sit in one slot.
pub struct TestRedis {
    pub url: String,
    /// e.g. `t1764460000_0a1b2c3d4e5f:`
    pub prefix: String,
}

impl TestRedis {
    /// A key space on `CMP_TEST_REDIS_URL` (a `redis://` or a `redis-cluster://` URL).
    pub async fn new() -> anyhow::Result<TestRedis> {
        Ok(Self::on(redis_url().await?))
    }

    /// A key space on the cluster named by `CMP_TEST_REDIS_CLUSTER_URL`, whatever
    /// `CMP_TEST_REDIS_URL` says; fails naming the variable when it is not set.
    pub async fn cluster() -> anyhow::Result<TestRedis> {
        let url = redis_cluster_url().with_context(|| {
            format!(
                "{REDIS_CLUSTER_VAR} is not set (e.g. redis-cluster://127.0.0.1:7101?node=\
                 127.0.0.1:7102&node=127.0.0.1:7103; scripts/redis-cluster.sh start 7101 7102 7103)"
            )
        })?;
        Ok(Self::on(url))
    }

    /// A key space on the Redis (or cluster) at `url`.
    pub fn on(url: String) -> TestRedis {
        let prefix = format!("{}:", unique_name("t"));
        TestRedis { url, prefix }
    }

    /// Whether the URL names a cluster (fred's `redis-cluster://` scheme).
    pub fn is_cluster(&self) -> bool {
        self.url
            .split("://")
            .next()
            .is_some_and(|s| s.ends_with("-cluster"))
    }

    /// A connected pool of `size` clients on the test Redis.
    pub async fn pool_of(&self, size: usize) -> anyhow::Result<Pool> {
        connect(&self.url, size).await
    }

    /// A connected pool of 4 clients on the test Redis.
    pub async fn pool(&self) -> anyhow::Result<Pool> {
        self.pool_of(4).await
    }
}

async fn connect(url: &str, size: usize) -> anyhow::Result<Pool> {
    let pool =
        Builder::from_config(Config::from_url(url).with_context(|| format!("redis url {url}"))?)
            .with_connection_config(|c| c.connection_timeout = Duration::from_secs(2))
            .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(10))
            // Reconnects like the binaries do (`ops::connect_redis`): a test that fails a
            // cluster node over keeps reading through its own pool afterwards.
            .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2))
            .build_pool(size)?;
    pool.init()
        .await
        .with_context(|| format!("connect to {url}"))?;
    Ok(pool)
}

/// Every key matching `pattern`: one SCAN on a single server, a SCAN per primary on a cluster
/// (a plain SCAN there walks one node only).
pub async fn keys_matching(client: &Client, pattern: &str) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    if client.is_clustered() {
        collect(
            client.scan_cluster(pattern.to_owned(), Some(1000), None),
            &mut found,
        )
        .await?;
    } else {
        collect(
            client.scan(pattern.to_owned(), Some(1000), None),
            &mut found,
        )
        .await?;
    }
    found.sort();
    found.dedup();
    Ok(found)
}

async fn collect(
    pages: impl Stream<Item = Result<ScanResult, Error>>,
    found: &mut Vec<String>,
) -> anyhow::Result<()> {
    let mut pages = std::pin::pin!(pages);
    while let Some(page) = pages.next().await {
        let mut page = page?;
        if let Some(keys) = page.take_results() {
            found.extend(keys.into_iter().filter_map(|k| k.into_string()));
        }
    }
    Ok(())
}

/// Unlinks `keys` one UNLINK per key in one pipeline: on a cluster each command goes to the
/// node owning its key (a multi-key UNLINK across slots fails with CROSSSLOT). Returns how many
/// existed.
pub async fn unlink_each(client: &Client, keys: &[String]) -> anyhow::Result<u64> {
    let mut removed = 0;
    for chunk in keys.chunks(1000) {
        let pipe = client.pipeline();
        for key in chunk {
            let _: () = pipe.unlink(key.as_str()).await?;
        }
        let counts: Vec<u64> = pipe.all().await?;
        removed += counts.iter().sum::<u64>();
    }
    Ok(removed)
}

/// Deletes every key under `prefix` (never FLUSHALL: other tests share the server) and returns
/// how many there were.
pub async fn unlink_prefix(client: &Client, prefix: &str) -> anyhow::Result<u64> {
    let keys = keys_matching(client, &format!("{prefix}*")).await?;
    unlink_each(client, &keys).await
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let url = self.url.clone();
        let prefix = self.prefix.clone();
        run_blocking_cleanup("redis", async move {
            let pool = connect(&url, 1).await?;
            let client = pool.next().clone();
            unlink_prefix(&client, &prefix).await?;
            pool.quit().await?;
            Ok(())
        });
    }
}

/// A `redis-server` of the test's own, on a free local port, killed on drop: for what only a
/// server nobody else uses can show, such as the commands one process sends
/// ([`commands_processed`](Self::commands_processed)).
pub struct PrivateRedis {
    /// Dropped first (its keys deleted while the server runs), then the server is killed.
    pub redis: TestRedis,
    /// The connection [`commands_processed`](Self::commands_processed) asks on.
    info: Client,
    _server: tokio::process::Child,
}

impl PrivateRedis {
    /// Starts `redis-server` (from `PATH`) and waits until it answers.
    pub async fn start() -> anyhow::Result<PrivateRedis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = tokio::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("start redis-server (it must be on PATH)")?;
        let url = format!("redis://127.0.0.1:{port}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match connect(&url, 1).await {
                Ok(pool) => {
                    let _ = pool.quit().await;
                    break;
                }
                Err(e) if tokio::time::Instant::now() > deadline => {
                    return Err(e.context("redis-server did not answer within 10 s"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        let info = Builder::from_config(Config::from_url(&url)?).build()?;
        info.init().await?;
        Ok(PrivateRedis {
            redis: TestRedis::on(url),
            _server: child,
            info,
        })
    }

    /// `total_commands_processed` of `INFO stats`: every command the server ran, those called
    /// from scripts included (the `INFO` that reads it counts too).
    pub async fn commands_processed(&self) -> anyhow::Result<u64> {
        let info: String = self.info.info(Some(fred::types::InfoKind::Stats)).await?;
        info.lines()
            .find_map(|l| l.strip_prefix("total_commands_processed:"))
            .and_then(|n| n.trim().parse().ok())
            .context("INFO stats without total_commands_processed")
    }
}
