//! Scenario 4: the usage poll end to end, next to PostgreSQL's durable single-row write rate.
//!
//! Everything on this machine and wired as `cmp-worker run` wires it (bin-worker's
//! components.rs and worker.rs): the real stores on a pool of the worker's default size,
//! `StopResumeService`, `HttpGateway` (with the Redis rate limiter, unlimited) against an
//! in-process gateway-sim answering after 1 ms, the four real handlers from `build_registry`
//! and the real `Scheduler`. M cards, each with an active package, are due at once and come
//! back every 10 s (the config's carddata interval), so work never runs out; the sim's usage
//! grows 1 MB a query, so every poll writes its counters, a usage record and the deduction.
//! Checks/s counts successful carddata polls over the window after a short warm-up.
//!
//! The reference, measured right after in the same database: single-row `UPDATE ... WHERE id
//! = $1` of random cards, each its own durable transaction, on 8 connections.

use crate::cycle::{WORKER_REDIS_POOL, load_due, scheduler_settings};
use crate::env::{BenchEnv, PREFIX, connect_db, redis_pool, redis_traffic};
use crate::probes::{mean_ms, sample_waits};
use crate::report::{Row, Target, fmt_num};
use crate::worker::{self, WORKER_DB_POOL};
use crate::{fleet, rss};
use anyhow::Context;
use domain::{Clock, Intervals, SystemClock, TaskType};
use fred::prelude::ClientLike as _;
use gateway_sim::SimCardSpec;
use polling_queue::Keys;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const WARM_UP: Duration = Duration::from_secs(3);
/// How the end-to-end row's label starts (the batched scenario looks it up).
pub(crate) const ROW_PREFIX: &str = "carddata end to end";
const INTERVAL_SECS: u32 = 10;

pub(crate) async fn run(env: &BenchEnv, sizes: &crate::Sizes) -> anyhow::Result<Vec<Row>> {
    let cards = sizes.carddata_cards;
    let window = Duration::from_secs(sizes.carddata_secs);
    let reference_window = Duration::from_secs(sizes.reference_update_secs);
    let mut settings = scheduler_settings();
    settings.pools.0[TaskType::Carddata.index()] = sizes.carddata_pool;
    let load_before = loadavg();
    fleet::truncate(&env.db).await?;
    fleet::seed_cards(&env.db, cards).await?;
    fleet::seed_packages(&env.db).await?;
    let intervals = Intervals {
        realname_interval_secs: None,
        carddata_interval_secs: Some(INTERVAL_SECS),
        package_interval_secs: None,
        protect_interval_secs: None,
    };
    let db = connect_db(&env.db_url, WORKER_DB_POOL).await?;
    let stores = store::Stores::new(db.clone());
    fleet::seed_config(&stores, intervals).await?;
    fleet::vacuum(&env.db).await?;

    let specs: Vec<SimCardSpec> = (1..=cards)
        .map(|n| SimCardSpec {
            growth_mb_per_query: Some(Decimal::ONE),
            ..SimCardSpec::new(fleet::iccid(n))
        })
        .collect();
    let sim = crate::sim::start(specs).await?;

    let prefix = format!("{PREFIX}carddata:");
    env.clean_redis(&prefix).await?;
    let keys = Keys::new(prefix.clone());
    let redis = redis_pool(&env.redis_url, WORKER_REDIS_POOL).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let worker::Worker {
        queue,
        counting,
        gateway: timed,
        scheduler,
        ..
    } = worker::wire(&stores, &redis, &keys, sim.url(), clock, settings.clone()).await?;
    let counting = counting[TaskType::Carddata.index()].clone();
    load_due(&queue, cards).await?;

    let shutdown = CancellationToken::new();
    let sampler = rss::Sampler::start();
    let running = tokio::spawn(scheduler.run(shutdown.clone()));
    tokio::time::sleep(WARM_UP).await;
    let (before, commits_before, cpu_before) = (
        counting.snapshot(),
        commits(&env.db).await?,
        (cpu_secs(), machine_busy()),
    );
    let redis_before = redis_traffic(&redis).await?;
    let (handler_before, gateway_before) = (counting.timing.snapshot(), timed.timing.snapshot());
    let stop_sampling = CancellationToken::new();
    let waits = tokio::spawn(sample_waits(env.db.clone(), stop_sampling.clone()));
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let (after, commits_after, cpu_after) = (
        counting.snapshot(),
        commits(&env.db).await?,
        (cpu_secs(), machine_busy()),
    );
    let redis_after = redis_traffic(&redis).await?;
    let (handler_after, gateway_after) = (counting.timing.snapshot(), timed.timing.snapshot());
    stop_sampling.cancel();
    let waits = waits.await.unwrap_or_default();
    let secs = started.elapsed().as_secs_f64();
    shutdown.cancel();
    let report = running.await.context("scheduler task")?;
    let rss_peak = sampler.finish();
    let stats = sim.state().stats();
    let sim_stats = format!(
        "{} requests, by call {:?}, by outcome {:?}",
        stats.requests, stats.by_call, stats.by_outcome
    );
    sim.shutdown().await?;
    redis
        .quit()
        .await
        .context("close the worker's Redis pool")?;
    env.clean_redis(&prefix).await?;
    let d = [0, 1, 2, 3].map(|i| after[i] - before[i]);
    let checks = d[0] as f64 / secs;
    let commits_per_check = (commits_after - commits_before) as f64 / d[0].max(1) as f64;
    let per_check =
        |after: u64, before: u64| after.saturating_sub(before) as f64 / d[0].max(1) as f64;
    let redis_commands_per_check = per_check(redis_after.0, redis_before.0);
    let redis_reads_per_check = per_check(redis_after.1, redis_before.1);
    let cpu = (cpu_after.0 - cpu_before.0) / secs;
    let busy = (cpu_after.1.0 - cpu_before.1.0) / (cpu_after.1.1 - cpu_before.1.1).max(1.0);
    let cpu_per_check_us = (cpu_after.0 - cpu_before.0) / d[0].max(1) as f64 * 1e6;
    println!(
        "  carddata: {} ok, {} failed, {} requeued (pool full), {} skipped in {secs:.1} s",
        d[0], d[1], d[2], d[3]
    );

    let reference = durable_updates(&env.db_url, cards, reference_window).await?;
    println!("  PostgreSQL single-row durable UPDATE, 8 connections: {reference:.0}/s");
    let _ = db.close().await;
    let row = Row::new(
        format!("{ROW_PREFIX}, {} cards, {} s", fmt_num(cards as f64), window.as_secs()),
        checks,
        "checks/s",
        Some((reference, "durable 1-row UPDATEs/s, 8 conns")),
        Target::FigureAtLeast(5_600.0),
    )
    .note(format!(
        "in the window: {} ok, {} failed, {} requeued (pool full), {} skipped; {commits_per_check:.2} PostgreSQL commits per check; bench process CPU {cpu:.2} of {} cores ({cpu_per_check_us:.0} us a check, worker and sim), whole machine {:.0}% busy; shutdown drained: {}",
        d[0], d[1], d[2], d[3], num_cpus(), busy * 100.0, report.drained
    ))
    .note(format!(
        "mean handler time {:.1} ms (max {} in flight of a pool of {}), of which the gateway usage call {:.1} ms; PostgreSQL backends sampled: {waits}",
        mean_ms(handler_before, handler_after),
        counting.timing.max_running(),
        sizes.carddata_pool,
        mean_ms(gateway_before, gateway_after)
    ))
    .note(format!(
        "Redis per check: {redis_commands_per_check:.2} commands, {redis_reads_per_check:.2} round trips (read events; target <= 1.5); PostgreSQL: {commits_per_check:.3} commits per check (target <= 0.05)"
    ))
    .note(format!("load average before / after: {load_before} / {}", loadavg()))
    .note(format!("peak VmRSS {:.0} MB (worker and in-process gateway-sim)", rss::mb(rss_peak)))
    .note(format!("gateway-sim over the whole run: {sim_stats}"));
    let commits_row = Row::new(
        "PostgreSQL commits per carddata check".to_owned(),
        commits_per_check,
        "commits",
        None,
        Target::FigureAtMost(0.05),
    )
    .note("xact_commit of the bench database over the window (reads count: autocommit SELECTs are transactions)");
    let redis_row = Row::new(
        "Redis round trips per carddata check".to_owned(),
        redis_reads_per_check,
        "round trips",
        None,
        Target::FigureAtMost(1.5),
    )
    .note(format!(
        "INFO stats total_reads_processed over the window (server-wide); {redis_commands_per_check:.2} commands per check"
    ));
    let commands_row = Row::new(
        "Redis commands per carddata check".to_owned(),
        redis_commands_per_check,
        "commands",
        None,
        Target::Reported,
    )
    .note("INFO stats total_commands_processed over the window (server-wide), pipelined or not; the commands a script calls count too");
    let cpu_row = Row::new(
        "worker CPU per carddata check".to_owned(),
        cpu_per_check_us,
        "us",
        None,
        Target::Reported,
    )
    .note("user + system CPU of the bench process (the worker's pools and the in-process gateway-sim) over the window, per check; PostgreSQL and Redis not included");
    Ok(vec![row, commits_row, redis_row, commands_row, cpu_row])
}

/// Single-row durable UPDATEs by primary key, 8 connections, for `window`: per second.
async fn durable_updates(url: &str, cards: u64, window: Duration) -> anyhow::Result<f64> {
    let db = connect_db(url, 8).await?;
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + window;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..8u64 {
        let (db, done) = (db.clone(), done.clone());
        tasks.spawn(async move {
            let mut id = w;
            while Instant::now() < until {
                id = (id
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407))
                    >> 1;
                let card = (id % cards) as i64 + 1;
                update(&db, card).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.context("update task")??;
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let _ = db.close().await;
    Ok(rate)
}

async fn update(db: &DatabaseConnection, card: i64) -> anyhow::Result<()> {
    db.execute_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        "UPDATE tb_iot_card SET updated_at = now() WHERE id = $1",
        [card.into()],
    ))
    .await
    .context("single-row update")?;
    Ok(())
}

pub(crate) async fn commits(db: &DatabaseConnection) -> anyhow::Result<u64> {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
        ))
        .await
        .context("pg_stat_database")?
        .context("no pg_stat_database row")?;
    Ok(u64::try_from(row.try_get_by_index::<i64>(0).context("xact_commit")?).unwrap_or(0))
}

/// `(busy, total)` jiffies of the whole machine (/proc/stat): everyone's work, not only ours.
pub(crate) fn machine_busy() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return (0.0, 0.0);
    };
    let f: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: f64 = f.iter().take(8).sum();
    let idle = f.get(3).copied().unwrap_or(0.0) + f.get(4).copied().unwrap_or(0.0);
    (total - idle, total)
}

/// User + system CPU seconds of this process so far.
fn cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // After the command name (which may hold spaces) comes field 3, the state; utime and stime
    // are fields 14 and 15, in clock ticks (100 a second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

pub(crate) fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The 1-minute load average (other work on this shared machine shows here).
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}
