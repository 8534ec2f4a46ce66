//! Where the test services are: environment variables first, containers second.

use anyhow::{Context, bail};
use std::sync::OnceLock;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ImageExt};
use testcontainers_modules::{postgres::Postgres, redis::Redis};
use tokio::sync::OnceCell;

pub(crate) const DATABASE_VAR: &str = "CMP_TEST_DATABASE_URL";
pub(crate) const REDIS_VAR: &str = "CMP_TEST_REDIS_URL";
/// A Redis Cluster for the tests that need one whatever `CMP_TEST_REDIS_URL` names.
pub(crate) const REDIS_CLUSTER_VAR: &str = "CMP_TEST_REDIS_CLUSTER_URL";

/// Containers live as long as the test process.
static PG_CONTAINER: OnceCell<(String, ContainerAsync<Postgres>)> = OnceCell::const_new();
static REDIS_CONTAINER: OnceCell<(String, ContainerAsync<Redis>)> = OnceCell::const_new();
static DOCKER_HINT: OnceLock<()> = OnceLock::new();

fn from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

fn no_services(var: &str, err: &anyhow::Error) -> anyhow::Error {
    DOCKER_HINT.get_or_init(|| ());
    anyhow::anyhow!(
        "no test {what}: set {var} (e.g. {example}) or make a Docker daemon reachable for \
         testcontainers ({err:#})",
        what = if var == DATABASE_VAR {
            "PostgreSQL"
        } else {
            "Redis"
        },
        example = if var == DATABASE_VAR {
            "postgres://postgres@127.0.0.1:5432/test"
        } else {
            "redis://127.0.0.1:6379"
        },
    )
}

/// URL of a database the harness may create and drop databases from.
pub(crate) async fn admin_database_url() -> anyhow::Result<String> {
    if let Some(url) = from_env(DATABASE_VAR) {
        return Ok(url);
    }
    let (url, _) = PG_CONTAINER
        .get_or_try_init(|| async {
            let c = Postgres::default()
                .with_tag("16-alpine")
                .start()
                .await
                .map_err(|e| no_services(DATABASE_VAR, &e.into()))?;
            let port = c
                .get_host_port_ipv4(5432)
                .await
                .context("postgres container port")?;
            Ok::<_, anyhow::Error>((
                format!("postgres://postgres:postgres@127.0.0.1:{port}/postgres"),
                c,
            ))
        })
        .await?;
    Ok(url.clone())
}

pub(crate) fn redis_cluster_url() -> Option<String> {
    from_env(REDIS_CLUSTER_VAR)
}

pub(crate) async fn redis_url() -> anyhow::Result<String> {
    if let Some(url) = from_env(REDIS_VAR) {
        return Ok(url);
    }
    let (url, _) = REDIS_CONTAINER
        .get_or_try_init(|| async {
            let c = Redis::default()
                .with_tag("7-alpine")
                .start()
                .await
                .map_err(|e| no_services(REDIS_VAR, &e.into()))?;
            let port = c
                .get_host_port_ipv4(6379)
                .await
                .context("redis container port")?;
            Ok::<_, anyhow::Error>((format!("redis://127.0.0.1:{port}"), c))
        })
        .await?;
    Ok(url.clone())
}

/// Replaces the database name of a PostgreSQL URL.
pub(crate) fn with_database(url: &str, name: &str) -> anyhow::Result<String> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let Some(slash) = base.rfind('/').filter(|i| *i > "postgres://".len()) else {
        bail!("{DATABASE_VAR} must name a database, e.g. postgres://postgres@127.0.0.1:5432/test");
    };
    let mut out = format!("{}/{name}", &base[..slash]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_the_database_name() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/test", "x")
                .ok()
                .as_deref(),
            Some("postgres://postgres@127.0.0.1:5432/x")
        );
        assert_eq!(
            with_database("postgres://u:p@h:1/test?sslmode=disable", "y")
                .ok()
                .as_deref(),
            Some("postgres://u:p@h:1/y?sslmode=disable")
        );
        assert!(with_database("postgres://h:1", "y").is_err());
    }
}
