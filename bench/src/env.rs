//! The bench's own world: a fresh `cmp_bench` database (`CMP_BENCH_DATABASE_NAME` names
//! another, so that two benches on one server do not drop each other's) and the `bench:` Redis
//! key prefix (a database index in `CMP_BENCH_REDIS_URL`, `redis://host:6379/3`, keeps two
//! benches on one Redis apart).
//!
//! Redis is shared with other work on this machine: keys are only ever removed by prefix
//! (SCAN + UNLINK), never by FLUSHALL. Both work on a Redis Cluster too (SCAN per primary, one
//! UNLINK per key), which `--redis-cluster` uses.

use anyhow::Context;
use fred::prelude::*;
use fred::types::InfoKind;
use futures::TryStreamExt;
use migrations::{Migrator, MigratorTrait};
use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection};
use std::time::{Duration, Instant};

/// The database the bench creates and drops, unless `CMP_BENCH_DATABASE_NAME` names another.
const DB_NAME: &str = "cmp_bench";
/// Every Redis key of the bench starts with this.
pub(crate) const PREFIX: &str = "bench:";

pub(crate) struct BenchEnv {
    admin_url: String,
    /// The database created for this run and dropped after it.
    db_name: String,
    pub(crate) db_url: String,
    pub(crate) redis_url: String,
    /// Pool for the bench's own statements (seeding, references).
    pub(crate) db: DatabaseConnection,
    /// Pool for the bench's own commands (loading, cleaning, INFO).
    pub(crate) redis: Pool,
}

impl BenchEnv {
    pub(crate) async fn new() -> anyhow::Result<BenchEnv> {
        let admin_url = std::env::var("CMP_BENCH_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let redis_url = std::env::var("CMP_BENCH_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let db_name = database_name(std::env::var("CMP_BENCH_DATABASE_NAME").ok())?;
        let admin = connect_db(&admin_url, 1)
            .await
            .context("CMP_BENCH_DATABASE_URL")?;
        admin
            .execute_unprepared(&format!(
                "DROP DATABASE IF EXISTS \"{db_name}\" WITH (FORCE)"
            ))
            .await
            .with_context(|| format!("drop an old {db_name}"))?;
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{db_name}\""))
            .await
            .with_context(|| format!("create {db_name}"))?;
        let _ = admin.close().await;
        let db_url = with_database(&admin_url, &db_name)?;
        let db = connect_db(&db_url, 8).await?;
        Migrator::up(&db, None)
            .await
            .with_context(|| format!("migrate {db_name}"))?;
        let redis = redis_pool(&redis_url, 4).await?;
        let env = BenchEnv {
            admin_url,
            db_name,
            db_url,
            redis_url,
            db,
            redis,
        };
        env.clean_redis(PREFIX).await?;
        Ok(env)
    }

    /// Removes every key under `prefix` (which must start with the bench's own prefix).
    pub(crate) async fn clean_redis(&self, prefix: &str) -> anyhow::Result<u64> {
        anyhow::ensure!(
            prefix.starts_with(PREFIX),
            "refusing to clean keys outside {PREFIX}"
        );
        let client = self.redis.next();
        let pattern = format!("{prefix}*");
        // A plain SCAN walks one node of a cluster: there, one SCAN per primary.
        let keys: Vec<Key> = if client.is_clustered() {
            client
                .scan_cluster_buffered(pattern, Some(1_000), None)
                .try_collect()
                .await
        } else {
            client
                .scan_buffered(pattern, Some(1_000), None)
                .try_collect()
                .await
        }
        .context("scan bench keys")?;
        // One UNLINK per key, pipelined: a multi-key UNLINK fails with CROSSSLOT on a cluster.
        let mut removed = 0u64;
        for chunk in keys.chunks(500) {
            let pipe = client.pipeline();
            for key in chunk {
                let _: () = pipe.unlink(key.clone()).await?;
            }
            let counts: Vec<i64> = pipe.all().await.context("unlink bench keys")?;
            removed += counts.into_iter().map(|n| n.max(0) as u64).sum::<u64>();
        }
        wait_lazyfree(&self.redis).await?;
        Ok(removed)
    }

    /// The same database with another Redis (e.g. a cluster), for scenarios run on both; its
    /// keys are cleaned with [`clean_redis`](Self::clean_redis), the database stays this one's.
    pub(crate) async fn with_redis(&self, redis_url: &str) -> anyhow::Result<BenchEnv> {
        let redis = redis_pool(redis_url, 4).await?;
        let env = BenchEnv {
            admin_url: self.admin_url.clone(),
            db_name: self.db_name.clone(),
            db_url: self.db_url.clone(),
            redis_url: redis_url.to_owned(),
            db: self.db.clone(),
            redis,
        };
        env.clean_redis(PREFIX).await?;
        Ok(env)
    }

    /// Drops the database (unless kept) and the bench's keys.
    pub(crate) async fn teardown(self, keep: bool) -> anyhow::Result<()> {
        self.clean_redis(PREFIX).await?;
        let _ = self.db.close().await;
        if keep {
            println!("kept database {} ({})", self.db_name, self.db_url);
            return Ok(());
        }
        let admin = connect_db(&self.admin_url, 1).await?;
        admin
            .execute_unprepared(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.db_name
            ))
            .await
            .with_context(|| format!("drop {}", self.db_name))?;
        let _ = admin.close().await;
        Ok(())
    }
}

/// A PostgreSQL pool of at most `max` connections.
pub(crate) async fn connect_db(url: &str, max: u32) -> anyhow::Result<DatabaseConnection> {
    let mut opts = ConnectOptions::new(url.to_owned());
    opts.max_connections(max)
        .min_connections(1)
        .connect_timeout(Duration::from_secs(5))
        .acquire_timeout(Duration::from_secs(30))
        .sqlx_logging(false);
    Database::connect(opts)
        .await
        .with_context(|| format!("connect to {url}"))
}

/// A Redis pool built the way `ops::connect_redis` builds the worker's, with a longer command
/// timeout for the bulk loads of the bench.
pub(crate) async fn redis_pool(url: &str, size: usize) -> anyhow::Result<Pool> {
    let pool = Builder::from_config(Config::from_url(url).context("CMP_BENCH_REDIS_URL")?)
        .with_connection_config(|c| c.connection_timeout = Duration::from_secs(2))
        .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(120))
        .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2))
        .build_pool(size)
        .context("build the Redis pool")?;
    pool.init()
        .await
        .with_context(|| format!("connect to {url}"))?;
    Ok(pool)
}

/// The bench's database name: `CMP_BENCH_DATABASE_NAME` if set, else `cmp_bench`. Only
/// lowercase letters, digits and `_` (it is dropped with `WITH (FORCE)`: no quoting games).
fn database_name(var: Option<String>) -> anyhow::Result<String> {
    let name = var.unwrap_or_else(|| DB_NAME.to_owned());
    anyhow::ensure!(
        !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "CMP_BENCH_DATABASE_NAME must be 1-63 of a-z, 0-9 and _ (got {name:?})"
    );
    Ok(name)
}

/// `url` with its database path replaced by `name` (query string kept).
fn with_database(url: &str, name: &str) -> anyhow::Result<String> {
    let scheme_end = url.find("://").context("database URL without scheme")? + 3;
    let (head, rest) = url.split_at(scheme_end);
    let query = rest.find('?').map_or("", |q| &rest[q..]);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    Ok(format!("{head}{authority}/{name}{query}"))
}

/// A field of `INFO memory`; on a cluster, summed over the primaries.
pub(crate) async fn info_memory(redis: &Pool, field: &str) -> anyhow::Result<u64> {
    let client = redis.next();
    if !client.is_clustered() {
        let info: String = client
            .info(Some(InfoKind::Memory))
            .await
            .context("INFO memory")?;
        return memory_field(&info, field);
    }
    let mut total = 0;
    for node in client.split_cluster().context("the cluster's primaries")? {
        node.init().await.context("connect to a primary")?;
        let info: anyhow::Result<String> = node
            .info(Some(InfoKind::Memory))
            .await
            .context("INFO memory on a primary");
        let _ = node.quit().await;
        total += memory_field(&info?, field)?;
    }
    Ok(total)
}

fn memory_field(info: &str, field: &str) -> anyhow::Result<u64> {
    info.lines()
        .find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("INFO memory has no {field}"))
}

/// Redis's own counts of commands and of read events (a read event is one round trip of a
/// client: a pipeline that arrives in one read counts once), from `INFO stats`. Server-wide:
/// another client of the same Redis counts too.
pub(crate) async fn redis_traffic(redis: &Pool) -> anyhow::Result<(u64, u64)> {
    let info: String = redis
        .next()
        .info(Some(InfoKind::Stats))
        .await
        .context("INFO stats")?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .with_context(|| format!("INFO stats has no {name}"))
    };
    Ok((
        field("total_commands_processed")?,
        field("total_reads_processed")?,
    ))
}

/// The CPU seconds (user + system, main thread and the rest) Redis has used, from `INFO cpu`.
/// On a cluster, the sum over the primaries.
pub(crate) async fn redis_cpu_secs(redis: &Pool) -> anyhow::Result<f64> {
    let client = redis.next();
    let nodes = if client.is_clustered() {
        client.split_cluster().context("the cluster's primaries")?
    } else {
        vec![client.clone()]
    };
    let mut total = 0.0;
    for node in nodes {
        if client.is_clustered() {
            node.init().await.context("connect to a primary")?;
        }
        let info: String = node.info(Some(InfoKind::Cpu)).await.context("INFO cpu")?;
        if client.is_clustered() {
            let _ = node.quit().await;
        }
        for field in ["used_cpu_sys", "used_cpu_user"] {
            total += info
                .lines()
                .find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .with_context(|| format!("INFO cpu has no {field}"))?;
        }
    }
    Ok(total)
}

/// Waits until UNLINKed values are freed, so that `used_memory` means what is stored.
pub(crate) async fn wait_lazyfree(redis: &Pool) -> anyhow::Result<()> {
    let until = Instant::now() + Duration::from_secs(120);
    while info_memory(redis, "lazyfree_pending_objects").await? > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{database_name, with_database};

    #[test]
    fn database_name_defaults_and_is_checked() {
        assert_eq!(database_name(None).ok().as_deref(), Some("cmp_bench"));
        assert_eq!(
            database_name(Some("cmp_bench_cycle".to_owned()))
                .ok()
                .as_deref(),
            Some("cmp_bench_cycle")
        );
        assert!(database_name(Some("x\"; DROP".to_owned())).is_err());
        assert!(database_name(Some(String::new())).is_err());
    }

    #[test]
    fn database_is_replaced() {
        let u = with_database(
            "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
            "x",
        );
        assert_eq!(
            u.ok().as_deref(),
            Some("postgres://postgres@127.0.0.1:5432/x?sslmode=disable")
        );
        let u = with_database("postgres://h", "x");
        assert_eq!(u.ok().as_deref(), Some("postgres://h/x"));
    }
}
