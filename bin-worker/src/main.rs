//! `cmp-worker`: the worker node. `main` only parses the command, loads the settings and
//! wires the parts together; the parts live in the library crates.

mod seed;

use anyhow::Context;
use clap::{Parser, Subcommand};
use migrations::{Migrator, MigratorTrait};
use settings::Settings;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cmp-worker", version, about = "Polls the carriers for every card and stops or resumes cards")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the worker node until SIGTERM or Ctrl-C.
    Run,
    /// Apply the database migrations.
    Migrate,
    /// Generate a realistic fleet into the database (and into gateway-sim with --gateway-url).
    Seed(seed::SeedArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cmp-worker: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cmp-worker: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli, settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "cmp-worker failed");
            eprintln!("cmp-worker: {e:#}");
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
        Command::Seed(args) => seed::run(&settings, args).await,
        Command::Run => serve(settings).await,
    }
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let metrics = ops::install_metrics()?;
    let db = ops::connect_database(&settings).await?;
    let redis = ops::connect_redis(&settings).await?;
    let shutdown = ops::shutdown_token();
    let router = ops::health_router(ops::Readiness { db, redis }, metrics);
    ops::serve(settings.worker_bind, router, shutdown).await?;
    tracing::info!("worker stopped");
    Ok(())
}
