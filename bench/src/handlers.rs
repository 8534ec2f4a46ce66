//! Scenario 8: the realname, package and protect polls end to end in steady state, counted as
//! the carddata scenario counts its own: PostgreSQL commits and Redis round trips per check.
//!
//! One fleet for the three runs: M verified, online cards, two to a device, each device with
//! one active package whose carrier view (external id, status, usage, limit, dates) is exactly
//! what the database holds. So every poll finds nothing to change, as most polls of a real
//! fleet do: the real-name is the same, the packages are the same, no protect period is set and
//! the decision table says "nothing". Wired as `cmp-worker run` wires it (`worker::wire`), the
//! in-process gateway-sim answering after 1 ms. One run per task type: only that type's
//! interval is set (10 s), its queues are filled with every card due at once, and after a short
//! warm-up one window is measured.
//!
//! Counts: `xact_commit` of the bench database (its own, so only this run's transactions;
//! autocommit reads count too), and Redis `INFO stats` `total_reads_processed`, which is
//! server-wide: the rate measured while the worker was idle (other clients of the same server)
//! is subtracted.

use crate::carddata::{commits, loadavg};
use crate::cycle::{WORKER_REDIS_POOL, load_due_of, scheduler_settings};
use crate::env::{BenchEnv, PREFIX, connect_db, redis_pool, redis_traffic};
use crate::report::{Row, Target, fmt_num};
use crate::worker::{self, WORKER_DB_POOL};
use anyhow::Context;
use chrono::{DateTime, TimeZone, Utc};
use domain::{CarrierPackage, Clock, Intervals, PackageStatus, SystemClock, TaskType};
use fred::prelude::ClientLike as _;
use gateway_sim::SimCardSpec;
use polling_queue::Keys;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const WARM_UP: Duration = Duration::from_secs(3);
/// How long the idle Redis traffic of other clients is sampled.
const IDLE_SAMPLE: Duration = Duration::from_secs(2);
const INTERVAL_SECS: u32 = 10;
/// The one package of every device, as the database and the carrier both hold it.
const LIMIT_MB: i64 = 100_000_000;

fn activated_at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default()
}

fn expires_at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2099, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default()
}

/// The external id of device `d`'s package.
fn external_id(device: u64) -> String {
    format!("P-{device}")
}

fn device_of(card: u64) -> u64 {
    card.div_ceil(2)
}

pub(crate) async fn run(env: &BenchEnv, sizes: &crate::Sizes) -> anyhow::Result<Vec<Row>> {
    let cards = sizes.handlers_cards;
    let window = Duration::from_secs(sizes.handlers_secs);
    seed(&env.db, cards).await?;
    let specs: Vec<SimCardSpec> = (1..=cards)
        .map(|n| SimCardSpec {
            packages: vec![CarrierPackage {
                external_id: external_id(device_of(n)),
                status: PackageStatus::Active,
                used_mb: Decimal::ZERO,
                limit_mb: Some(Decimal::from(LIMIT_MB)),
                activated_at: Some(activated_at()),
                expires_at: Some(expires_at()),
            }],
            ..SimCardSpec::new(crate::fleet::iccid(n))
        })
        .collect();
    let sim = crate::sim::start(specs).await?;
    let mut rows = Vec::new();
    for task in [TaskType::Realname, TaskType::Package, TaskType::Protect] {
        let measured = one(env, task, cards, window, sim.url()).await?;
        rows.extend(measured);
    }
    sim.shutdown().await?;
    Ok(rows)
}

/// `cards` verified online cards, card `i` on device `ceil(i / 2)`, one active package per
/// device with external id `P-{device}`.
async fn seed(db: &DatabaseConnection, cards: u64) -> anyhow::Result<()> {
    db.execute_unprepared(
        "TRUNCATE tb_data_usage_record, tb_card_state_log, tb_package_usage, tb_iot_card, \
         tb_device, tb_polling_config RESTART IDENTITY CASCADE",
    )
    .await
    .context("truncate the bench tables")?;
    let devices = device_of(cards);
    db.execute_unprepared(&format!(
        "INSERT INTO tb_device (id, device_no, enable_polling) \
         SELECT i, 'DEVH' || lpad(i::text, 10, '0'), TRUE \
         FROM generate_series(1::bigint, {devices}::bigint) AS i"
    ))
    .await
    .context("seed devices")?;
    db.execute_unprepared(&format!(
        "INSERT INTO tb_iot_card (id, iccid, carrier_id, card_category, status, real_name_status, \
         network_status, enable_polling, device_id) \
         SELECT i, '8986' || lpad(i::text, 16, '0'), 1 + i % 3, 'normal', 1, 1, 1, TRUE, (i + 1) / 2 \
         FROM generate_series(1::bigint, {cards}::bigint) AS i"
    ))
    .await
    .context("seed cards")?;
    db.execute_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        "INSERT INTO tb_package_usage (device_id, external_id, status, data_limit_mb, \
         virtual_ratio, used_mb, activated_at, expires_at, reset_cycle) \
         SELECT d.id, 'P-' || d.id, 'active', $1, 1, 0, $2, $3, 'none' FROM tb_device d",
        [
            Decimal::from(LIMIT_MB).into(),
            activated_at().into(),
            expires_at().into(),
        ],
    ))
    .await
    .context("seed device packages")?;
    crate::fleet::vacuum(db).await?;
    db.execute_unprepared("VACUUM (ANALYZE) tb_device")
        .await
        .context("vacuum devices")?;
    Ok(())
}

fn intervals_of(task: TaskType) -> Intervals {
    let only = |t: TaskType| (t == task).then_some(INTERVAL_SECS);
    Intervals {
        realname_interval_secs: only(TaskType::Realname),
        carddata_interval_secs: only(TaskType::Carddata),
        package_interval_secs: only(TaskType::Package),
        protect_interval_secs: only(TaskType::Protect),
    }
}

async fn state_log_rows(db: &DatabaseConnection) -> anyhow::Result<i64> {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT count(*) FROM tb_card_state_log",
        ))
        .await
        .context("count state-log rows")?
        .context("no count")?;
    row.try_get_by_index::<i64>(0).context("count")
}

/// One task type's run: its config, fresh queues, the worker, one window.
async fn one(
    env: &BenchEnv,
    task: TaskType,
    cards: u64,
    window: Duration,
    gateway_url: String,
) -> anyhow::Result<Vec<Row>> {
    let load_before = loadavg();
    env.db
        .execute_unprepared("DELETE FROM tb_polling_config")
        .await
        .context("clear polling configs")?;
    let db = connect_db(&env.db_url, WORKER_DB_POOL).await?;
    let stores = store::Stores::new(db.clone());
    crate::fleet::seed_config(&stores, intervals_of(task)).await?;
    let prefix = format!("{PREFIX}handlers:{task}:");
    env.clean_redis(&prefix).await?;
    let keys = Keys::new(prefix.clone());
    let redis = redis_pool(&env.redis_url, WORKER_REDIS_POOL).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let settings = scheduler_settings();
    let pool = settings.pools.0[task.index()];
    let worker::Worker {
        queue,
        counting,
        scheduler,
        ..
    } = worker::wire(&stores, &redis, &keys, gateway_url, clock, settings).await?;
    let counting = counting[task.index()].clone();
    load_due_of(&queue, task, cards).await?;
    let logs_before = state_log_rows(&env.db).await?;

    // Other clients of the same Redis server, measured while this worker does nothing.
    let idle_before = redis_traffic(&redis).await?;
    let idle_started = Instant::now();
    tokio::time::sleep(IDLE_SAMPLE).await;
    let idle_after = redis_traffic(&redis).await?;
    let idle_secs = idle_started.elapsed().as_secs_f64();
    let idle_reads_per_sec = idle_after.1.saturating_sub(idle_before.1) as f64 / idle_secs;
    let idle_commands_per_sec = idle_after.0.saturating_sub(idle_before.0) as f64 / idle_secs;

    let shutdown = CancellationToken::new();
    let running = tokio::spawn(scheduler.run(shutdown.clone()));
    tokio::time::sleep(WARM_UP).await;
    let (before, commits_before, redis_before) = (
        counting.snapshot(),
        commits(&env.db).await?,
        redis_traffic(&redis).await?,
    );
    let handler_before = counting.timing.snapshot();
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let (after, commits_after, redis_after) = (
        counting.snapshot(),
        commits(&env.db).await?,
        redis_traffic(&redis).await?,
    );
    let handler_after = counting.timing.snapshot();
    let secs = started.elapsed().as_secs_f64();
    shutdown.cancel();
    let report = running.await.context("scheduler task")?;
    redis
        .quit()
        .await
        .context("close the worker's Redis pool")?;
    env.clean_redis(&prefix).await?;
    let logs_written = state_log_rows(&env.db).await? - logs_before;
    let _ = db.close().await;

    let d = [0, 1, 2, 3].map(|i| after[i] - before[i]);
    // Successful and skipped polls are checks; failures and requeues are not.
    let checks = (d[0] + d[3]).max(1) as f64;
    let rate = checks / secs;
    let commits_per_check = (commits_after - commits_before) as f64 / checks;
    let other = |per_sec: f64| per_sec * secs;
    let reads =
        (redis_after.1.saturating_sub(redis_before.1) as f64 - other(idle_reads_per_sec)).max(0.0);
    let commands = (redis_after.0.saturating_sub(redis_before.0) as f64
        - other(idle_commands_per_sec))
    .max(0.0);
    let (reads_per_check, commands_per_check) = (reads / checks, commands / checks);
    let load_after = loadavg();
    println!(
        "  {task}: {} ok, {} failed, {} requeued (pool full), {} skipped in {secs:.1} s; \
         {commits_per_check:.3} commits, {reads_per_check:.2} Redis round trips per check",
        d[0], d[1], d[2], d[3]
    );
    let window_note = format!(
        "in the window: {} ok, {} failed, {} requeued (pool full), {} skipped; pool {pool}; mean \
         handler time {:.1} ms; state-log rows written {logs_written}; shutdown drained: {}; \
         load average before / after: {load_before} / {load_after}",
        d[0],
        d[1],
        d[2],
        d[3],
        crate::probes::mean_ms(handler_before, handler_after),
        report.drained
    );
    Ok(vec![
        Row::new(
            format!(
                "{task} end to end, steady state, {} cards, {} s",
                fmt_num(cards as f64),
                window.as_secs()
            ),
            rate,
            "checks/s",
            None,
            Target::FigureAtLeast(0.0),
        )
        .note(window_note),
        Row::new(
            format!("PostgreSQL commits per {task} check"),
            commits_per_check,
            "commits",
            None,
            Target::FigureAtMost(0.05),
        )
        .note("xact_commit of the bench database over the window (reads count: autocommit SELECTs are transactions)"),
        Row::new(
            format!("Redis round trips per {task} check"),
            reads_per_check,
            "round trips",
            None,
            Target::FigureAtMost(1.5),
        )
        .note(format!(
            "INFO stats total_reads_processed over the window, less other clients' idle rate \
             ({idle_reads_per_sec:.0}/s); {commands_per_check:.2} commands per check"
        )),
    ])
}
