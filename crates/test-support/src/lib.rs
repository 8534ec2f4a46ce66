//! The test harness. Every test owns its world:
//!
//! * [`TestDb`]: a fresh PostgreSQL database, cloned in milliseconds from a migrated template
//!   (named after [`migrations::schema_fingerprint`], so a changed schema gets a new template),
//!   dropped when the value is dropped. Databases left by crashed runs are swept after two hours.
//! * [`TestRedis`]: a key prefix of its own on a shared Redis or Redis Cluster; its keys are
//!   deleted on drop (SCAN per primary and one UNLINK per key, so it works on a cluster too).
//! * [`TestEnv`] holds both.
//!
//! Services come from `CMP_TEST_DATABASE_URL` / `CMP_TEST_REDIS_URL` when set (the Redis URL may
//! be a cluster's, `redis-cluster://h:p?node=h:p&node=h:p`: `just test-cluster` runs the
//! Redis-touching suites that way; [`TestEnv::cluster`] asks for `CMP_TEST_REDIS_CLUSTER_URL`
//! whatever the other says); otherwise
//! PostgreSQL 16 and Redis 7 containers are started with testcontainers when a Docker daemon is
//! reachable; otherwise the harness fails at once, saying which variables to set.

mod db;
mod redis;
mod services;

pub use db::TestDb;
pub use redis::{PrivateRedis, TestRedis, keys_matching, unlink_each, unlink_prefix};

/// A fresh database and an isolated Redis key space.
pub struct TestEnv {
    pub db: TestDb,
    pub redis: TestRedis,
}

impl TestEnv {
    pub async fn new() -> anyhow::Result<TestEnv> {
        let (db, redis) = tokio::try_join!(TestDb::new(), TestRedis::new())?;
        Ok(TestEnv { db, redis })
    }

    /// A fresh database and a key space on the cluster of `CMP_TEST_REDIS_CLUSTER_URL`.
    pub async fn cluster() -> anyhow::Result<TestEnv> {
        let (db, redis) = tokio::try_join!(TestDb::new(), TestRedis::cluster())?;
        Ok(TestEnv { db, redis })
    }
}

/// A name unique across concurrent test processes, starting with the creation time in unix
/// seconds so that sweeps can tell leftovers from live worlds.
pub(crate) fn unique_name(tag: &str) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!(
        "{tag}{secs}_{:012x}",
        rand::random::<u64>() & 0xffff_ffff_ffff
    )
}

/// Runs async cleanup from `Drop`, on a thread with its own runtime (the test's runtime may be
/// shutting down), and waits for it.
pub(crate) fn run_blocking_cleanup<F>(what: &'static str, fut: F)
where
    F: std::future::Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let handle = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(fut)
    });
    match handle.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("test-support: {what} cleanup failed: {e:#}"),
        Err(_) => eprintln!("test-support: {what} cleanup panicked"),
    }
}
