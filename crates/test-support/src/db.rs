use crate::services::{admin_database_url, with_database};
use crate::{run_blocking_cleanup, unique_name};
use anyhow::Context;
use migrations::{Migrator, MigratorTrait};
use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, Statement};
use std::time::Duration;

/// Serialises template builds across test processes (any constant shared by all of them).
const TEMPLATE_LOCK: i64 = 0x0063_6d70_5f74_706c;
/// Test databases older than this are leftovers of crashed runs.
const SWEEP_AFTER_SECS: u64 = 2 * 3600;
const TEST_DB_TAG: &str = "cmpt_";

/// A fresh, migrated PostgreSQL database owned by one test; dropped with the value.
pub struct TestDb {
    /// A pool on the test's database (at most 8 connections).
    pub conn: DatabaseConnection,
    pub url: String,
    pub name: String,
    admin_url: String,
}

impl TestDb {
    pub async fn new() -> anyhow::Result<TestDb> {
        let admin_url = admin_database_url().await?;
        let template = ensure_template(&admin_url).await?;
        let name = unique_name(TEST_DB_TAG);
        let admin = connect(&admin_url, 1).await?;
        // Cloning a template fails while another session is connected to it; builds hold the
        // lock, so a short retry covers the rare overlap.
        let mut attempt = 0;
        loop {
            let sql = format!("CREATE DATABASE \"{name}\" TEMPLATE \"{template}\"");
            match admin.execute_unprepared(&sql).await {
                Ok(_) => break,
                Err(e)
                    if attempt < 20 && e.to_string().contains("being accessed by other users") =>
                {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e).context("create test database"),
            }
        }
        let _ = admin.close().await;
        let url = with_database(&admin_url, &name)?;
        let conn = connect(&url, 8).await?;
        Ok(TestDb {
            conn,
            url,
            name,
            admin_url,
        })
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = std::mem::take(&mut self.name);
        run_blocking_cleanup("database", async move {
            let admin = connect(&admin_url, 1).await?;
            admin
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                .await?;
            let _ = admin.close().await;
            Ok(())
        });
    }
}

async fn connect(url: &str, max: u32) -> anyhow::Result<DatabaseConnection> {
    let mut opts = ConnectOptions::new(url.to_owned());
    opts.max_connections(max)
        .min_connections(0)
        .connect_timeout(Duration::from_secs(5))
        .sqlx_logging(false);
    Database::connect(opts)
        .await
        .with_context(|| format!("connect to {url}"))
}

/// Builds the migrated template for the current schema once (across processes) and returns its
/// name. Also sweeps stale templates and leftover test databases.
async fn ensure_template(admin_url: &str) -> anyhow::Result<String> {
    let template = format!("cmp_tpl_{}", migrations::schema_fingerprint());
    let admin = connect(admin_url, 1).await?;
    let backend = admin.get_database_backend();
    let row = admin
        .query_one_raw(Statement::from_string(
            backend,
            format!("SELECT datistemplate FROM pg_database WHERE datname = '{template}'"),
        ))
        .await?;
    if matches!(
        row.map(|r| r.try_get::<bool>("", "datistemplate")),
        Some(Ok(true))
    ) {
        let _ = admin.close().await;
        return Ok(template);
    }
    // Session-level advisory lock: held by this one admin connection until unlocked.
    admin
        .execute_unprepared(&format!("SELECT pg_advisory_lock({TEMPLATE_LOCK})"))
        .await?;
    let built = build_template(&admin, admin_url, &template).await;
    admin
        .execute_unprepared(&format!("SELECT pg_advisory_unlock({TEMPLATE_LOCK})"))
        .await?;
    let _ = admin.close().await;
    built.map(|()| template)
}

async fn build_template(
    admin: &DatabaseConnection,
    admin_url: &str,
    template: &str,
) -> anyhow::Result<()> {
    let backend = admin.get_database_backend();
    let rows = admin
        .query_all_raw(Statement::from_string(
            backend,
            "SELECT datname, datistemplate FROM pg_database \
             WHERE datname LIKE 'cmp_tpl_%' OR datname LIKE 'cmpt_%'"
                .to_owned(),
        ))
        .await?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut ready = false;
    for row in rows {
        let name: String = row.try_get("", "datname")?;
        let is_template: bool = row.try_get("", "datistemplate")?;
        let stale = if name == template {
            ready = is_template;
            !is_template // half-built by a crashed run
        } else if let Some(rest) = name.strip_prefix(TEST_DB_TAG) {
            let born: u64 = rest
                .split('_')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            now.saturating_sub(born) > SWEEP_AFTER_SECS
        } else {
            // A template of another schema: another checkout (a branch, a worktree) sharing
            // this server may be using it right now, so it is left alone. Each is one empty
            // schema, a few megabytes.
            false
        };
        if stale {
            if name.starts_with("cmp_tpl_") {
                let _ = admin
                    .execute_unprepared(&format!("ALTER DATABASE \"{name}\" IS_TEMPLATE false"))
                    .await;
            }
            admin
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                .await
                .with_context(|| format!("sweep {name}"))?;
        }
    }
    if ready {
        return Ok(());
    }
    admin
        .execute_unprepared(&format!("CREATE DATABASE \"{template}\""))
        .await
        .context("create template database")?;
    let tpl = connect(&with_database(admin_url, template)?, 1).await?;
    Migrator::up(&tpl, None)
        .await
        .context("migrate template database")?;
    tpl.close().await?;
    admin
        .execute_unprepared(&format!("ALTER DATABASE \"{template}\" IS_TEMPLATE true"))
        .await?;
    Ok(())
}
