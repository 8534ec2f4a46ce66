//! `cmp-api`: an admin API replica. Any number run behind a load balancer; each is stateless.
//! `main` only parses the command, loads the settings and wires the parts together.

mod app;
mod audit;
mod auth;
mod body;
mod components;
mod error;
mod extract;
mod guard;
mod imports;
mod keys;
mod mirror;
mod openapi;
mod ops_state;
mod pagination;
mod routes;
mod session;
mod state;
mod stream;
#[cfg(test)]
mod tests;
mod ui;
mod view;

use anyhow::Context;
use clap::{Parser, Subcommand};
use settings::Settings;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cmp-api", version, about = "Admin API of the polling core")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API until SIGTERM or Ctrl-C (in-flight requests finish).
    Serve,
    /// Apply the database migrations.
    Migrate,
    /// Manage API keys.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Print the OpenAPI document.
    Openapi,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Openapi = cli.command {
        // The document needs no settings and no connection.
        return match openapi::document_json() {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("cmp-api: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    ops::main("cmp-api", |settings| run(cli, settings))
}

async fn run(cli: Cli, settings: Settings) -> anyhow::Result<()> {
    match cli.command {
        Command::Migrate => ops::migrate(&settings).await,
        Command::Keys(cmd) => keys::run(&settings, cmd).await,
        Command::Serve => serve(settings).await,
        Command::Openapi => Ok(()),
    }
}

/// How often a replica looks for a changed carrier configuration.
const CARRIERS_FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let metrics = ops::install_metrics()?;
    let db = ops::connect_database(&settings).await?;
    let redis = ops::connect_redis(&settings).await?;
    let shutdown = ops::shutdown_token();
    let (state, configs) = components::state(&settings, db.clone(), redis.clone(), None)?;
    // Operators' stops and starts go to each card's carrier: read the carriers before serving,
    // then follow their changes.
    let carrier_store = store::Stores::new(db.clone()).carriers;
    if let Err(e) = state.carriers.refresh(carrier_store.as_ref()).await {
        // Not migrated yet, or PostgreSQL away: the follower below retries every few seconds;
        // until then every card uses CMP_GATEWAY_URL.
        tracing::warn!(error = %e, "cannot read the carriers at start");
    }
    let carriers = tokio::spawn(state.carriers.clone().follow(
        carrier_store,
        CARRIERS_FOLLOW_EVERY,
        shutdown.clone(),
    ));
    let loaded = configs.start().await.context("load polling configs")?;
    tracing::info!(configs = loaded, "polling configs loaded");
    let refresher = configs
        .spawn_refresher(shutdown.clone())
        .await
        .context("subscribe to polling config changes")?;
    // An API replica is ready when it can serve: PostgreSQL and Redis answer. Whether the
    // queues are initialised is the worker's readiness (a fresh deployment's API must not be
    // taken out of the load balancer while the first worker initialises).
    let readiness = ops::Readiness::new(db, redis);
    let health = ops::health_router(readiness, metrics);
    ops::serve(settings.api_bind, app::app(state, health), shutdown).await?;
    let _ = refresher.await;
    carriers.abort();
    tracing::info!("api stopped");
    Ok(())
}
