//! Scenario 7: fleet capacity. The largest fleet one worker node keeps up with, at the default
//! polling configs of a new deployment (`polling_config::default_configs`, as `cmp-worker seed`
//! writes them: usage every 300 s for most cards), with the CPU split between the worker,
//! PostgreSQL, Redis and the simulator.
//!
//! A mixed fleet as `cmp-worker seed` draws it (`fleet::extend_mixed`) is seeded in PostgreSQL
//! and registered in a gateway-sim that answers after 1 ms and runs in this process on a
//! runtime of its own (threads named `gateway-sim`, so that its CPU is told from the worker's).
//! A trial of N cards switches polling on for the first N, fills fresh queues with the real
//! `CardInitializer` (first scores spread over one interval: the steady load of a fleet in its
//! normal round, N × the sum of 1/interval polls a second), and runs the worker wired as
//! `cmp-worker run` wires it. It waits (at most one window) for the cards that fell due while
//! the queues were filled, then measures one window, sampling the due backlog (ZCOUNT of score
//! <= now over every queue: leased cards are not in it). **Kept up**: the backlog at the end is
//! at most 10 s of demand (or 1,000 cards) and not above its first sample plus 2 s of demand.
//!
//! The search: trial 1 at the start size; the next size is estimated from what trial 1
//! measured (kept up: scaled by the CPU left, others' load subtracted; not kept up: by polls
//! done / polls due), clamped to ×4 / ÷4; a third trial splits the bracket (or steps down by a
//! fifth from a failed second). The figure is the largest size that kept up.

use crate::cpu::{CpuSnapshot, CpuSplit, SIM_THREAD, postgres_pids};
use crate::cycle::{WORKER_REDIS_POOL, scheduler_settings};
use crate::env::{BenchEnv, PREFIX, connect_db, redis_pool};
use crate::fleet;
use crate::report::{Row, Target, fmt_num};
use crate::worker::{self, WORKER_DB_POOL};
use anyhow::Context;
use domain::{CardId, Clock, SystemClock, TaskType};
use fred::prelude::ClientLike as _;
use gateway_sim::{SimHandle, SimServer};
use lifecycle::{CardInitializer, InitMode, InitSettings};
use polling_config::PollingConfigManager;
use polling_queue::Keys;
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Trials at most (each: switch the fleet, fill the queues, drain, one window).
const MAX_TRIALS: usize = 3;
/// How often the backlog is sampled in a window.
const SAMPLE_EVERY: Duration = Duration::from_secs(2);
/// Kept up: the backlog at the end is at most this much demand.
const BOUND_SECS: f64 = 10.0;
/// ... and did not grow by more than this much demand over the window.
const GROWTH_SECS: f64 = 2.0;
/// The smallest backlog bound, for small fleets (a second's sweep of the scheduler).
const BOUND_MIN: f64 = 1_000.0;
/// Of the cores left, how much an estimate may plan to use.
const HEADROOM: f64 = 0.85;

/// What one trial measured.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Trial {
    cards: u64,
    /// Queue entries the initializer wrote.
    entries: u64,
    /// Polls a second the fleet asks for, per task type (Σ 1/interval of its matched configs).
    demand: [f64; 4],
    /// Polls a second done in the window, per task type (every outcome).
    done: [f64; 4],
    /// Failed polls in the window.
    failed: u64,
    /// Seconds the startup backlog took to drain (`None`: not within one window).
    drained_after: Option<f64>,
    /// `(seconds into the window, due backlog)`.
    backlog: Vec<(f64, u64)>,
    cpu: CpuSplit,
    kept_up: bool,
    load_before: String,
    load_after: String,
    /// PostgreSQL rows read per poll in the window, by table: `(table, by sequential scans,
    /// by index scans)`, the largest first.
    rows_read: Vec<(String, f64, f64)>,
    window_secs: f64,
    init_secs: f64,
}

impl Trial {
    fn demand_total(&self) -> f64 {
        self.demand.iter().sum()
    }
    fn done_total(&self) -> f64 {
        self.done.iter().sum()
    }

    fn describe(&self) -> String {
        let per_type = |v: &[f64; 4]| {
            TaskType::ALL
                .iter()
                .map(|t| format!("{t} {:.0}", v[t.index()]))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (first, peak, last) = (
            self.backlog.first().map_or(0, |b| b.1),
            self.backlog.iter().map(|b| b.1).max().unwrap_or(0),
            self.backlog.last().map_or(0, |b| b.1),
        );
        format!(
            "{} cards ({} entries, queues filled in {:.0} s): {} — polls/s due {:.0} ({}), done {:.0} ({}), {} failed; startup backlog drained {}; due backlog first / peak / last {} / {} / {} over {:.0} s; CPU {}; load average {} / {}; PostgreSQL rows read per poll (sequential / index): {}",
            fmt_num(self.cards as f64),
            fmt_num(self.entries as f64),
            self.init_secs,
            if self.kept_up {
                "kept up"
            } else {
                "NOT kept up"
            },
            self.demand_total(),
            per_type(&self.demand),
            self.done_total(),
            per_type(&self.done),
            self.failed,
            self.drained_after
                .map_or("not within one window".to_owned(), |s| format!(
                    "after {s:.0} s"
                )),
            first,
            peak,
            last,
            self.window_secs,
            self.cpu.describe(),
            self.load_before,
            self.load_after,
            self.rows_read
                .iter()
                .take(4)
                .map(|(t, seq, idx)| format!("{t} {seq:.1} / {idx:.1}"))
                .collect::<Vec<_>>()
                .join(", "),
        )
    }
}

pub(crate) async fn run(env: &BenchEnv, start: u64, window: Duration) -> anyhow::Result<Vec<Row>> {
    let start = start.max(1_000);
    fleet::reset_mixed(&env.db).await?;
    let db = connect_db(&env.db_url, WORKER_DB_POOL).await?;
    let stores = store::Stores::new(db.clone());
    for config in polling_config::default_configs(false) {
        stores
            .configs
            .insert(&config)
            .await
            .context("insert the default configs")?;
    }
    // The simulator on a runtime of its own: its threads' CPU is its own.
    let sim_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(SIM_THREAD)
        .enable_all()
        .build()
        .context("the gateway-sim runtime")?;
    let sim = sim_runtime
        .spawn(SimServer::start(crate::sim::options()))
        .await
        .context("gateway-sim task")?
        .context("start gateway-sim")?;
    let mut seeded = 0u64;
    let mut trials: Vec<Trial> = Vec::new();
    let mut next = start;
    let result = async {
        while trials.len() < MAX_TRIALS {
            if next > seeded {
                let t = Instant::now();
                grow(&env.db, &sim, seeded + 1, next).await?;
                println!(
                    "  seeded cards {}..={next} in {:.1} s",
                    seeded + 1,
                    t.elapsed().as_secs_f64()
                );
                seeded = next;
            }
            let trial = trial(env, &db, &stores, &sim, next, trials.len(), window).await?;
            println!("  {}", trial.describe());
            trials.push(trial);
            match plan(&trials) {
                Some(n) => next = n,
                None => break,
            }
        }
        anyhow::Ok(())
    }
    .await;
    let stats = sim.state().stats();
    let _ = sim_runtime.spawn(sim.shutdown()).await;
    sim_runtime.shutdown_background();
    let _ = db.close().await;
    result?;

    let best = trials.iter().filter(|t| t.kept_up).max_by_key(|t| t.cards);
    let failed = trials
        .iter()
        .filter(|t| !t.kept_up && best.is_none_or(|b| t.cards > b.cards))
        .min_by_key(|t| t.cards);
    let figure = best.map_or(0.0, |t| t.cards as f64);
    let mut row = Row::new(
        "fleet capacity of one node, default configs (usage every 300 s)".to_owned(),
        figure,
        "cards per node",
        failed.map(|f| (f.cards as f64, "cards: smallest trial not kept up")),
        Target::FigureAtLeast(1_000_000.0),
    )
    .note(match (best, failed) {
        (Some(_), Some(_)) => "the largest trial fleet whose due backlog stayed bounded; the capacity lies between the figure and the reference".to_owned(),
        (Some(_), None) => "the largest trial fleet whose due backlog stayed bounded; every trial kept up, so the capacity is at least this".to_owned(),
        (None, _) => "no trial kept up: the capacity is below the smallest trial".to_owned(),
    })
    .note(format!(
        "gateway-sim in this process on threads of its own (CPU split by thread); PostgreSQL = the bench database's backends and the server's background processes; Redis = the server's INFO cpu (shared: other clients count too); gateway-sim over the run: {} requests",
        stats.requests
    ));
    for (i, t) in trials.iter().enumerate() {
        row = row.note(format!("trial {}: {}", i + 1, t.describe()));
    }
    if let Some(b) = best {
        let per_k = |cores: f64| cores / b.done_total().max(f64::MIN_POSITIVE) * 1000.0;
        row = row.note(format!(
            "CPU per 1,000 polls at {} cards: worker {:.3}, PostgreSQL {:.3}, Redis {:.3}, gateway-sim {:.3} core-seconds",
            fmt_num(b.cards as f64),
            per_k(b.cpu.worker),
            per_k(b.cpu.postgres),
            per_k(b.cpu.redis),
            per_k(b.cpu.sim)
        ));
    }
    Ok(vec![row])
}

/// Cards `from..=to` into PostgreSQL and the simulator.
async fn grow(db: &DatabaseConnection, sim: &SimHandle, from: u64, to: u64) -> anyhow::Result<()> {
    fleet::extend_mixed(db, from, to).await?;
    let mut at = from;
    while at <= to {
        let end = (at + 99_999).min(to);
        crate::sim::register(sim, fleet::mixed_sim_cards(at, end))?;
        at = end + 1;
    }
    Ok(())
}

/// The next size to try, or `None` when the search is done.
fn plan(trials: &[Trial]) -> Option<u64> {
    let round = |n: f64| ((n / 10_000.0).round().max(1.0) * 10_000.0) as u64;
    let last = trials.last()?;
    let best = trials.iter().filter(|t| t.kept_up).map(|t| t.cards).max();
    let worst = trials.iter().filter(|t| !t.kept_up).map(|t| t.cards).min();
    let next = match (best, worst) {
        // A bracket: split it (geometric mean), unless it is already within 15 %.
        (Some(b), Some(w)) if w > b => {
            if w as f64 / b as f64 <= 1.15 {
                return None;
            }
            round((b as f64 * w as f64).sqrt())
        }
        // Failed above a success cannot happen; below one it means noise: stop there.
        (Some(_), Some(_)) => return None,
        (Some(_), None) => {
            // Scale by the CPU left: of the machine's cores, what others do is not ours to take.
            let cores = crate::carddata::num_cpus() as f64;
            let others = (last.cpu.machine - last.cpu.ours()).max(0.0);
            let room = ((cores - others) * HEADROOM).max(0.1);
            let factor = (room / last.cpu.ours().max(0.01)).clamp(1.1, 4.0);
            round(last.cards as f64 * factor)
        }
        (None, _) => {
            let factor =
                (last.done_total() / last.demand_total().max(f64::MIN_POSITIVE)).clamp(0.25, 0.8);
            round(last.cards as f64 * factor)
        }
    };
    (!trials.iter().any(|t| t.cards == next)).then_some(next)
}

#[allow(clippy::too_many_arguments)]
async fn trial(
    env: &BenchEnv,
    db: &DatabaseConnection,
    stores: &store::Stores,
    sim: &SimHandle,
    cards: u64,
    index: usize,
    window: Duration,
) -> anyhow::Result<Trial> {
    fleet::enable_first(&env.db, cards).await?;
    let prefix = format!("{PREFIX}fleet:{index}:");
    env.clean_redis(&prefix).await?;
    let keys = Keys::new(prefix.clone());
    let redis = redis_pool(&env.redis_url, WORKER_REDIS_POOL).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let w = worker::wire(
        stores,
        &redis,
        &keys,
        sim.url(),
        clock.clone(),
        scheduler_settings(),
    )
    .await?;
    let demand = demand(stores, &w.configs).await?;
    let init = CardInitializer::new(
        stores.cards.clone(),
        w.configs.clone(),
        redis.clone(),
        keys.clone(),
        clock,
        InitSettings::default(),
    );
    let filled = init
        .run(InitMode::Initial)
        .await
        .context("fill the queues")?;
    let demand_total: f64 = demand.iter().sum();
    let bound = (demand_total * BOUND_SECS).max(BOUND_MIN);
    let backlog = |queue: polling_queue::PollingQueueManager| async move {
        let mut total = 0u64;
        for task in TaskType::ALL {
            total += queue.get_due_backlog(task).await.context("due backlog")?;
        }
        anyhow::Ok(total)
    };

    let (queue, counting) = (w.queue.clone(), w.counting.clone());
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(w.scheduler.run(shutdown.clone()));
    let result = async {
        // The cards that fell due while the queues were filled: wait until they are done.
        let warm = Instant::now();
        let drained_after = loop {
            if backlog(queue.clone()).await? as f64 <= bound {
                break Some(warm.elapsed().as_secs_f64());
            }
            if warm.elapsed() >= window {
                break None;
            }
            tokio::time::sleep(SAMPLE_EVERY).await;
        };
        let pids = postgres_pids(db).await?;
        let load_before = crate::carddata::loadavg();
        let counts = |c: &[Arc<crate::probes::Counting>; 4]| c.clone().map(|h| h.snapshot());
        let (before, cpu_before) = (counts(&counting), CpuSnapshot::take(&redis, &pids).await?);
        let tables_before = table_reads(&env.db).await?;
        let started = Instant::now();
        let mut samples = Vec::new();
        while started.elapsed() < window {
            samples.push((
                started.elapsed().as_secs_f64(),
                backlog(queue.clone()).await?,
            ));
            tokio::time::sleep(SAMPLE_EVERY).await;
        }
        samples.push((
            started.elapsed().as_secs_f64(),
            backlog(queue.clone()).await?,
        ));
        let (after, cpu_after) = (counts(&counting), CpuSnapshot::take(&redis, &pids).await?);
        let tables_after = table_reads(&env.db).await?;
        let secs = started.elapsed().as_secs_f64();
        let done = [0, 1, 2, 3]
            .map(|t| (0..4).map(|o| after[t][o] - before[t][o]).sum::<u64>() as f64 / secs);
        let failed = (0..4).map(|t| after[t][1] - before[t][1]).sum();
        let polls = (done.iter().sum::<f64>() * secs).max(1.0);
        let mut rows_read: Vec<(String, f64, f64)> = tables_after
            .iter()
            .map(|(table, (seq, idx))| {
                let (seq0, idx0) = tables_before.get(table).copied().unwrap_or_default();
                (
                    table.clone(),
                    seq.saturating_sub(seq0) as f64 / polls,
                    idx.saturating_sub(idx0) as f64 / polls,
                )
            })
            .filter(|(_, seq, idx)| seq + idx > 0.0)
            .collect();
        rows_read.sort_by(|a, b| (b.1 + b.2).total_cmp(&(a.1 + a.2)));
        let (first, last) = (
            samples.first().map_or(0, |s| s.1) as f64,
            samples.last().map_or(0, |s| s.1) as f64,
        );
        let kept_up =
            drained_after.is_some() && last <= bound && last <= first + demand_total * GROWTH_SECS;
        anyhow::Ok(Trial {
            cards,
            entries: filled.added,
            demand,
            done,
            failed,
            drained_after,
            backlog: samples,
            cpu: cpu_after.since(&cpu_before, secs),
            kept_up,
            load_before,
            load_after: crate::carddata::loadavg(),
            rows_read,
            window_secs: secs,
            init_secs: filled.elapsed.as_secs_f64(),
        })
    }
    .await;
    shutdown.cancel();
    let _ = running.await;
    let _ = redis.quit().await;
    env.clean_redis(&prefix).await?;
    result
}

/// Polls a second the polling-enabled fleet asks for, per task type: Σ 1/interval of each
/// card's matched config (the same pages and matching as the initializer).
async fn demand(
    stores: &store::Stores,
    configs: &PollingConfigManager,
) -> anyhow::Result<[f64; 4]> {
    let snapshot = configs.snapshot();
    let mut demand = [0.0; 4];
    let mut after: Option<CardId> = None;
    loop {
        let page = stores
            .cards
            .page_polling_enabled(after, 100_000)
            .await
            .context("page the fleet")?;
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        for card in &page {
            if let Some(matched) = snapshot.match_config(card) {
                for (task, interval) in matched.scheduled() {
                    demand[task.index()] += 1.0 / interval.as_secs_f64().max(1.0);
                }
            }
        }
        if page.len() < 100_000 {
            break;
        }
    }
    Ok(demand)
}

/// `table -> (rows read by sequential scans, rows fetched by index scans)` so far, from
/// `pg_stat_user_tables` of the bench database (partitions summed under their own names).
async fn table_reads(
    db: &DatabaseConnection,
) -> anyhow::Result<std::collections::BTreeMap<String, (u64, u64)>> {
    use sea_orm::{ConnectionTrait, Statement};
    // Statistics reach the view when a backend flushes them (at most a second or so later).
    let rows = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT relname::text, coalesce(seq_tup_read, 0)::bigint, coalesce(idx_tup_fetch, 0)::bigint \
             FROM pg_stat_user_tables",
        ))
        .await
        .context("pg_stat_user_tables")?;
    rows.iter()
        .map(|r| {
            let table: String = r.try_get_by_index(0).context("relname")?;
            let seq: i64 = r.try_get_by_index(1).context("seq_tup_read")?;
            let idx: i64 = r.try_get_by_index(2).context("idx_tup_fetch")?;
            Ok((table, (seq.max(0) as u64, idx.max(0) as u64)))
        })
        .collect()
}
