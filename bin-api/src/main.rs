//! `cmp-api`: an admin API replica. Any number run behind a load balancer; each is stateless.
//! `main` only parses the command, loads the settings and wires the parts together.

mod keys;

use anyhow::Context;
use clap::{Parser, Subcommand};
use migrations::{Migrator, MigratorTrait};
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
    /// Serve the API until SIGTERM or Ctrl-C.
    Serve,
    /// Apply the database migrations.
    Migrate,
    /// Manage API keys.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cmp-api: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cmp-api: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli, settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cmp-api: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli, settings: Settings) -> anyhow::Result<()> {
    ops::init_tracing(&settings)?;
    match cli.command {
        Command::Migrate => {
            let db = ops::connect_database(&settings).await?;
            Migrator::up(&db, None).await.context("apply migrations")?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Keys(cmd) => keys::run(&settings, cmd).await,
        Command::Serve => serve(settings).await,
    }
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let metrics = ops::install_metrics()?;
    let db = ops::connect_database(&settings).await?;
    let redis = ops::connect_redis(&settings).await?;
    let shutdown = ops::shutdown_token();
    let router = ops::health_router(ops::Readiness { db, redis }, metrics);
    ops::serve(settings.api_bind, router, shutdown).await?;
    tracing::info!("api stopped");
    Ok(())
}
