//! `cmp-api`: an admin API replica. Any number run behind a load balancer; each is stateless.
//! `main` only parses the command, loads the settings and wires the parts together.

mod app;
mod audit;
mod auth;
mod components;
mod error;
mod extract;
mod guard;
mod keys;
mod openapi;
mod pagination;
mod routes;
#[cfg(test)]
mod tests;

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

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let metrics = ops::install_metrics()?;
    let db = ops::connect_database(&settings).await?;
    let redis = ops::connect_redis(&settings).await?;
    let shutdown = ops::shutdown_token();
    let (state, configs) = components::state(&settings, db.clone(), redis.clone(), None)?;
    let loaded = configs.start().await.context("load polling configs")?;
    tracing::info!(configs = loaded, "polling configs loaded");
    let refresher = configs
        .spawn_refresher(shutdown.clone())
        .await
        .context("subscribe to polling config changes")?;
    let keys = polling_queue::Keys::new(settings.redis_key_prefix.clone());
    let probe_redis = redis.clone();
    let readiness = ops::Readiness::new(db, redis).with_probe("queues", move || {
        lifecycle::queues_ready(probe_redis.clone(), keys.clone())
    });
    let health = ops::health_router(readiness, metrics);
    ops::serve(settings.api_bind, app::app(state, health), shutdown).await?;
    let _ = refresher.await;
    tracing::info!("api stopped");
    Ok(())
}
