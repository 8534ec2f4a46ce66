//! `gateway-sim serve`: the in-memory carrier gateway as a process (tests, bench, demo).

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use gateway_sim::{Faults, SimOptions, SimServer};
use std::net::SocketAddr;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "gateway-sim",
    about = "An in-memory carrier gateway speaking the CMP gateway protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the protocol and the /sim control API until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
}

#[derive(Args)]
struct ServeArgs {
    #[arg(long, default_value = "127.0.0.1:7070", env = "GATEWAY_SIM_BIND")]
    bind: SocketAddr,
    /// Fixes seeded usage growth and the fault draws.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// The carrier's time zone (month of usage answers).
    #[arg(long, default_value = "Asia/Shanghai")]
    timezone: chrono_tz::Tz,
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    #[arg(long, default_value_t = 0)]
    jitter_ms: u64,
    /// Share of requests answered 503 (0..1).
    #[arg(long, default_value_t = 0.0)]
    error_rate: f64,
    /// Share of requests answered 429 (0..1).
    #[arg(long, default_value_t = 0.0)]
    throttle_rate: f64,
    /// Share of requests that hang for --hang-ms (0..1).
    #[arg(long, default_value_t = 0.0)]
    timeout_rate: f64,
    /// Requests accepted per second, 429 beyond; 0 = no quota.
    #[arg(long, default_value_t = 0)]
    quota_per_sec: u64,
    /// Retry-After of injected throttling, seconds.
    #[arg(long, default_value_t = 1)]
    retry_after_secs: u64,
    /// How long an injected timeout hangs, milliseconds.
    #[arg(long, default_value_t = 60_000)]
    hang_ms: u64,
    /// Serve one real platform's protocol at the root (onelink, ctcc-5gcmp, control-center,
    /// 1nce, emnify); without it, the project's own protocol at the root and every platform on
    /// its prefix (/onelink, /ctcc, /control-center, /1nce, /emnify).
    #[arg(long)]
    protocol: Option<domain::CarrierProtocol>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("CMP_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let Command::Serve(args) = Cli::parse().command;
    let faults = Faults {
        latency_ms: args.latency_ms,
        jitter_ms: args.jitter_ms,
        error_rate: args.error_rate,
        throttle_rate: args.throttle_rate,
        timeout_rate: args.timeout_rate,
        quota_per_sec: args.quota_per_sec,
        retry_after_secs: args.retry_after_secs,
        hang_ms: args.hang_ms,
    };
    for (name, r) in [
        ("--error-rate", faults.error_rate),
        ("--throttle-rate", faults.throttle_rate),
        ("--timeout-rate", faults.timeout_rate),
    ] {
        anyhow::ensure!(
            (0.0..=1.0).contains(&r),
            "{name} must lie in 0..=1, got {r}"
        );
    }
    let opts = SimOptions {
        bind: args.bind,
        seed: args.seed,
        faults,
        timezone: args.timezone,
        protocol: args
            .protocol
            .filter(|p| *p != domain::CarrierProtocol::CmpJson),
        ..SimOptions::default()
    };
    let sim = SimServer::start(opts).await?;
    shutdown_signal()
        .await
        .context("waiting for a shutdown signal")?;
    sim.shutdown().await
}

async fn shutdown_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
