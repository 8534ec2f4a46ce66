//! `just bench`: the figures that say whether the polling core carries ten million cards.
//! Each figure is measured next to its physical limit or a peer in the same run and
//! reported with the ratio, because the machine is shared and noisy.
//!
//! The bench owns a fresh PostgreSQL database `cmp_bench` (or `CMP_BENCH_DATABASE_NAME`;
//! created on the server of `CMP_BENCH_DATABASE_URL`, dropped at the end unless `--keep`) and
//! the Redis key prefix `bench:` on `CMP_BENCH_REDIS_URL` (which may name a database index,
//! `redis://127.0.0.1:6379/3`), cleaned before and after. It never touches other keys.

mod batched;
mod capacity;
mod carddata;
mod cluster;
mod cpu;
mod cycle;
mod dequeue;
mod env;
mod fleet;
mod handlers;
mod idle;
mod initializer;
mod probes;
mod report;
mod rss;
mod sim;
mod worker;

use anyhow::Context;
use clap::Parser;
use report::{Report, Row, Target};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    name = "bench",
    about = "The numbers that say whether this carries ten million cards",
    after_help = "Environment: CMP_BENCH_DATABASE_URL (server and admin database, default \
postgres://postgres@127.0.0.1:5432/postgres), CMP_BENCH_DATABASE_NAME (the database created \
and dropped, default cmp_bench), CMP_BENCH_REDIS_URL (default redis://127.0.0.1:6379; a path \
/N selects database N), CMP_BENCH_REDIS_CLUSTER_URL (--redis-cluster), CMP_LOG (log filter)."
)]
struct Args {
    /// Fleet size of the initializer, memory and full-cycle scenarios (default 2,000,000;
    /// 10,000,000 for the full run; 100,000 with --quick).
    #[arg(long)]
    cards: Option<u64>,
    /// Length of the carddata end-to-end window (default 60; 15 with --quick).
    #[arg(long)]
    carddata_secs: Option<u64>,
    /// Cards of the handlers scenario (default 60,000; 20,000 with --quick).
    #[arg(long)]
    handlers_cards: Option<u64>,
    /// Measured window of each of the handlers scenario's three runs (default 30; 10 with
    /// --quick).
    #[arg(long)]
    handlers_secs: Option<u64>,
    /// Small sizes, about a minute: for development.
    #[arg(long)]
    quick: bool,
    /// Only these scenarios: initializer (with Redis memory), dequeue, cycle (with worker RSS),
    /// carddata, handlers (realname, package and protect in steady state), idle (Redis commands
    /// of a node with nothing due), fleet (fleet capacity). Repeat or separate with commas.
    #[arg(long, value_delimiter = ',')]
    only: Vec<Scenario>,
    /// Fleet size of the fleet-capacity scenario's first trial (default 300,000; 30,000 with
    /// --quick); later trials are sized from what it measured.
    #[arg(long)]
    fleet_start: Option<u64>,
    /// Measured window of each fleet-capacity trial (default 60; 20 with --quick).
    #[arg(long)]
    fleet_secs: Option<u64>,
    /// Handler pool of the carddata scenario (default: the worker's default, 256).
    #[arg(long, default_value_t = 256)]
    carddata_pool: usize,
    /// Also measure dequeue and full cycle on a three-master Redis Cluster next to the single
    /// Redis (CMP_BENCH_REDIS_CLUSTER_URL, else scripts/redis-cluster.sh on 7101-7103).
    #[arg(long)]
    redis_cluster: bool,
    /// Keep the bench's database (cmp_bench or CMP_BENCH_DATABASE_NAME) afterwards.
    #[arg(long)]
    keep: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Scenario {
    Initializer,
    Dequeue,
    Cycle,
    Carddata,
    Batched,
    Handlers,
    Fleet,
    Idle,
}

/// The sizes of one run (written to the report).
#[derive(Debug, Clone, serde::Serialize)]
struct Sizes {
    quick: bool,
    cards: u64,
    dequeue_members: usize,
    dequeue_rounds: usize,
    cycle_window_secs: u64,
    carddata_cards: u64,
    carddata_secs: u64,
    carddata_pool: usize,
    handlers_cards: u64,
    handlers_secs: u64,
    reference_update_secs: u64,
    fleet_start: u64,
    fleet_secs: u64,
    scenarios: Vec<Scenario>,
}

impl Sizes {
    fn of(args: &Args) -> Sizes {
        let q = args.quick;
        let scenarios = if args.only.is_empty() {
            vec![
                Scenario::Cycle,
                Scenario::Carddata,
                Scenario::Batched,
                Scenario::Handlers,
                Scenario::Initializer,
                Scenario::Dequeue,
                Scenario::Idle,
                Scenario::Fleet,
            ]
        } else {
            args.only.clone()
        };
        Sizes {
            quick: q,
            cards: args.cards.unwrap_or(if q { 100_000 } else { 2_000_000 }),
            dequeue_members: if q { 200_000 } else { 1_000_000 },
            dequeue_rounds: if q { 1 } else { 3 },
            cycle_window_secs: if q { 10 } else { 30 },
            carddata_cards: if q { 100_000 } else { 200_000 },
            carddata_secs: args.carddata_secs.unwrap_or(if q { 15 } else { 60 }),
            carddata_pool: args.carddata_pool.max(1),
            handlers_cards: args
                .handlers_cards
                .unwrap_or(if q { 20_000 } else { 60_000 })
                .max(2),
            handlers_secs: args.handlers_secs.unwrap_or(if q { 10 } else { 30 }).max(1),
            reference_update_secs: if q { 5 } else { 10 },
            fleet_start: args.fleet_start.unwrap_or(if q { 30_000 } else { 300_000 }),
            fleet_secs: args.fleet_secs.unwrap_or(if q { 20 } else { 60 }).max(1),
            scenarios,
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_env("CMP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let sizes = Sizes::of(&args);
    anyhow::ensure!(
        sizes.cards > 0 && sizes.carddata_secs > 0,
        "--cards and --carddata-secs must be positive"
    );
    let started = Instant::now();
    let started_at = chrono::Utc::now().to_rfc3339();
    println!("bench: {sizes:?}");

    let env = env::BenchEnv::new()
        .await
        .context("set up cmp_bench and the bench: prefix")?;
    let mut rows = Vec::new();
    for scenario in sizes.scenarios.clone() {
        println!("== {scenario:?}");
        let t = Instant::now();
        match run(&env, scenario, &sizes, &rows).await {
            Ok(mut r) => rows.append(&mut r),
            Err(e) => {
                eprintln!("{scenario:?} failed: {e:#}");
                rows.push(Row::unavailable(
                    format!("{scenario:?}"),
                    "",
                    Target::FigureAtLeast(0.0),
                    &format!("failed: {e:#}"),
                ));
            }
        }
        println!("   ({:.0} s)", t.elapsed().as_secs_f64());
    }
    if args.redis_cluster {
        println!("== RedisCluster");
        let cluster_sizes = cluster::Sizes {
            dequeue_members: sizes.dequeue_members,
            rounds: sizes.dequeue_rounds,
            cycle_cards: sizes.cards,
            cycle_window: Duration::from_secs(sizes.cycle_window_secs),
        };
        match cluster::run(&env, &cluster_sizes).await {
            Ok(mut r) => rows.append(&mut r),
            Err(e) => {
                eprintln!("RedisCluster failed: {e:#}");
                let why = format!("failed: {e:#}");
                rows.push(Row::unavailable(
                    "cluster",
                    "",
                    Target::FigureAtLeast(0.0),
                    &why,
                ));
            }
        }
    }
    env.teardown(args.keep).await?;

    let report = Report {
        commit: commit(),
        started_at,
        elapsed_secs: started.elapsed().as_secs_f64(),
        cpus: carddata::num_cpus(),
        sizes: serde_json::to_value(&sizes).context("sizes")?,
        rows,
    };
    println!(
        "\ncommit {} | {} cores | {:.0} s\n",
        report.commit, report.cpus, report.elapsed_secs
    );
    print!("{}", report::table(&report.rows));
    let path = report::report_path();
    report::write_json(&path, &report)?;
    println!("\nwritten to {}", path.display());
    Ok(())
}

/// `done`: the rows of the scenarios run before (the batched scenario compares itself with the
/// per-card carddata figure of the same run).
async fn run(
    env: &env::BenchEnv,
    scenario: Scenario,
    s: &Sizes,
    done: &[Row],
) -> anyhow::Result<Vec<Row>> {
    match scenario {
        Scenario::Batched => {
            let per_card = done
                .iter()
                .find(|r| r.scenario.starts_with(carddata::ROW_PREFIX) && r.met.is_some())
                .map(|r| r.figure);
            batched::run(env, s, per_card).await
        }
        Scenario::Initializer => initializer::run(env, s.cards).await,
        Scenario::Dequeue => dequeue::run(env, s.dequeue_members, s.dequeue_rounds).await,
        Scenario::Cycle => cycle::run(env, s.cards, Duration::from_secs(s.cycle_window_secs)).await,
        Scenario::Carddata => carddata::run(env, s).await,
        Scenario::Handlers => handlers::run(env, s).await,
        Scenario::Idle => idle::run(env, s.quick).await,
        Scenario::Fleet => {
            capacity::run(env, s.fleet_start, Duration::from_secs(s.fleet_secs)).await
        }
    }
}

/// `git rev-parse HEAD`, marked `+dirty` when the tree has changes.
fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(s) if !s.is_empty() => format!("{head}+dirty"),
        _ => head,
    }
}
