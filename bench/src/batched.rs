//! Scenario: batched dispatch against a carrier whose protocol answers 100 cards a call
//! (OneLink on the in-process gateway-sim, 1 ms a request), wired as `cmp-worker run` routes a
//! configured carrier: `CarrierRouter` → `BatchingGateway` (`CMP_BATCH_LINGER_MS` 20) → the
//! OneLink adapter, the real handlers and `Scheduler`, `CMP_WORKER_POOL_CARDDATA` 1024.
//!
//! 1. Throughput, no quota: M cards due at once and every 10 s, usage growing 1 MB a query (so
//!    every poll writes). Usage checks/s next to the per-card carddata figure of the same run,
//!    and carrier calls per check.
//! 2. A usage round under a carrier quota of 50 calls/s (cluster-wide budget) and 100 cards a
//!    call: N cards all due, interval an hour, so each is polled once. The round's time next to
//!    the quota's floor, N / 100 / 50 s. A few cards have crossed their package's limit at the
//!    carrier: starvation is one of them still running at the end of the round.
//! 3. Under that quota (50 calls/s), usage checks/s with 100 cards a call next to one card a
//!    call: the same account, sim and node, only the adapter's batch size differs. This is the
//!    condition batching is for: the carrier's budget, not our write path, is the limit.

use crate::cycle::{WORKER_REDIS_POOL, load_due, scheduler_settings};
use crate::env::{BenchEnv, PREFIX, connect_db, redis_pool};
use crate::fleet;
use crate::probes::mean_ms;
use crate::report::{Row, Target, fmt_num};
use crate::worker::{self, Carriers, WORKER_DB_POOL};
use anyhow::Context;
use chrono::{DateTime, Utc};
use domain::{
    AssumedCalls, CardId, CarrierAccount, CarrierId, CarrierLimits, CarrierProtocol, Clock,
    Credentials, Intervals, SystemClock, TaskType,
};
use fred::prelude::ClientLike as _;
use gateway::CallKind;
use gateway_sim::{SimCardSpec, SimHandle};
use polling_queue::Keys;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const WARM_UP: Duration = Duration::from_secs(3);
const POOL: usize = 1024;
const LINGER: Duration = Duration::from_millis(20);
const BATCH: u32 = 100;
const QUOTA_PER_SEC: u32 = 50;
/// Cards that crossed their limit at the carrier, in the quota round.
const CROSSING: u64 = 40;

/// `per_card`: the carddata scenario's checks/s of this run, when it ran.
pub(crate) async fn run(
    env: &BenchEnv,
    sizes: &crate::Sizes,
    per_card: Option<f64>,
) -> anyhow::Result<Vec<Row>> {
    let mut rows = throughput(env, sizes, per_card).await?;
    rows.extend(quota_round(env, sizes).await?);
    rows.push(under_quota(env, sizes).await?);
    Ok(rows)
}

/// The OneLink account of carrier 1 on `sim`, `batch` cards a call: with a `rate` (calls/s),
/// 10 calls in flight as OneLink publishes; without (0), no limit at all. OneLink's batch
/// queries are *assumed* calls (`docs/carriers/onelink.md`), off by default in the adapter and
/// the simulator: with `batch` above 1 they are turned on at both ends.
fn account(sim: &SimHandle, rate: u32, batch: u32) -> CarrierAccount {
    let assumed = batch > 1;
    sim.state().set_account(
        CarrierProtocol::OneLink,
        gateway_sim::SimAccountPatch {
            assumed_calls: Some(assumed),
            ..Default::default()
        },
    );
    let mut credentials = Credentials::new();
    for (k, v) in gateway_sim::SimAccount::default_for(CarrierProtocol::OneLink).credentials {
        credentials = credentials.with(k, v);
    }
    let now = chrono::Utc::now();
    CarrierAccount {
        carrier_id: CarrierId(1),
        name: "bench OneLink".to_owned(),
        protocol: CarrierProtocol::OneLink,
        base_url: sim.url_of(CarrierProtocol::OneLink),
        credentials,
        limits: CarrierLimits {
            rate_limit_per_sec: rate,
            max_concurrent: if rate == 0 { 0 } else { 10 },
            batch_size: batch,
            timeout_ms: 5000,
            assumed_calls: if assumed {
                AssumedCalls::all()
            } else {
                AssumedCalls::NONE
            },
        },
        enabled: true,
        created_at: now,
        updated_at: now,
    }
}

fn usage_calls(sim: &SimHandle) -> u64 {
    sim.state()
        .stats()
        .by_call
        .get(CallKind::Usage.as_str())
        .copied()
        .unwrap_or(0)
}

/// `n` cards of carrier 1 with a package each, one config polling usage every `interval`.
async fn seed(env: &BenchEnv, n: u64, interval: u32) -> anyhow::Result<store::Stores> {
    fleet::truncate(&env.db).await?;
    fleet::seed_cards(&env.db, n).await?;
    env.db
        .execute_unprepared("UPDATE tb_iot_card SET carrier_id = 1")
        .await
        .context("cards of carrier 1")?;
    fleet::seed_packages(&env.db).await?;
    let db = connect_db(&env.db_url, WORKER_DB_POOL).await?;
    let stores = store::Stores::new(db);
    let intervals = Intervals {
        realname_interval_secs: None,
        carddata_interval_secs: Some(interval),
        package_interval_secs: None,
        protect_interval_secs: None,
    };
    fleet::seed_config(&stores, intervals).await?;
    fleet::vacuum(&env.db).await?;
    Ok(stores)
}

/// A wired worker polling carrier 1 on `sim` with the `rate` quota, under its own key prefix.
async fn node(
    env: &BenchEnv,
    stores: &store::Stores,
    sim: &SimHandle,
    (rate, batch): (u32, u32),
    part: &str,
) -> anyhow::Result<(worker::Worker, fred::prelude::Pool, String)> {
    let prefix = format!("{PREFIX}batched-{part}:");
    env.clean_redis(&prefix).await?;
    let keys = Keys::new(prefix.clone());
    let redis = redis_pool(&env.redis_url, WORKER_REDIS_POOL).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut settings = scheduler_settings();
    settings.pools.0[TaskType::Carddata.index()] = POOL;
    let carriers = Carriers {
        accounts: vec![account(sim, rate, batch)],
        linger: LINGER,
    };
    let w = worker::wire_carriers(
        stores,
        &redis,
        &keys,
        (sim.url(), carriers),
        clock,
        settings,
    )
    .await?;
    Ok((w, redis, prefix))
}

async fn throughput(
    env: &BenchEnv,
    sizes: &crate::Sizes,
    per_card: Option<f64>,
) -> anyhow::Result<Vec<Row>> {
    let cards = sizes.carddata_cards;
    let window = Duration::from_secs(sizes.carddata_secs);
    let stores = seed(env, cards, 10).await?;
    let specs: Vec<SimCardSpec> = (1..=cards)
        .map(|n| SimCardSpec {
            growth_mb_per_query: Some(Decimal::ONE),
            ..SimCardSpec::new(fleet::iccid(n))
        })
        .collect();
    let sim = crate::sim::start(specs).await?;
    let (w, redis, prefix) = node(env, &stores, &sim, (0, BATCH), "throughput").await?;
    let counting = w.counting[TaskType::Carddata.index()].clone();
    load_due(&w.queue, cards).await?;

    let shutdown = CancellationToken::new();
    let running = tokio::spawn(w.scheduler.run(shutdown.clone()));
    tokio::time::sleep(WARM_UP).await;
    let (before, calls_before) = (counting.snapshot(), usage_calls(&sim));
    let (handler_before, gateway_before) =
        (counting.timing.snapshot(), w.gateway.timing.snapshot());
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let (after, calls_after) = (counting.snapshot(), usage_calls(&sim));
    let (handler_after, gateway_after) = (counting.timing.snapshot(), w.gateway.timing.snapshot());
    let secs = started.elapsed().as_secs_f64();
    shutdown.cancel();
    running.await.context("scheduler task")?;
    tear_down(env, sim, &redis, &prefix).await?;
    let d = [0, 1, 2, 3].map(|i| after[i] - before[i]);
    let checks = d[0] as f64 / secs;
    let calls_per_check = (calls_after - calls_before) as f64 / d[0].max(1) as f64;
    println!(
        "  batched carddata: {} ok, {} failed, {} requeued, {} skipped in {secs:.1} s; {} usage calls",
        d[0],
        d[1],
        d[2],
        d[3],
        calls_after - calls_before
    );
    let label = format!(
        "batched usage checks, {} cards, 100 a call, {} s",
        fmt_num(cards as f64),
        window.as_secs()
    );
    let row = match per_card {
        Some(reference) => Row::new(
            label,
            checks,
            "checks/s",
            Some((reference, "per-card carddata checks/s, this run")),
            Target::RatioAtLeast(3.0),
        ),
        None => Row::new(label, checks, "checks/s", None, Target::Reported)
            .note("run with the carddata scenario for the ratio to per-card polling"),
    }
    .note(format!(
        "mean handler time {:.1} ms (max {} in flight), of which the usage query {:.1} ms (its lane's linger, the batch call, the share-out)",
        mean_ms(handler_before, handler_after),
        counting.timing.max_running(),
        mean_ms(gateway_before, gateway_after)
    ))
    .note(format!(
        "in the window: {} ok, {} failed, {} requeued (pool full), {} skipped; pool {POOL}, linger {} ms; OneLink adapter on gateway-sim (1 ms a request), no quota; OneLink's assumed batch queries turned on at both ends (off by default)",
        d[0],
        d[1],
        d[2],
        d[3],
        LINGER.as_millis()
    ));
    let calls_row = Row::new(
        "carrier calls per usage check, 100-card batch protocol".to_owned(),
        calls_per_check,
        "calls",
        None,
        Target::FigureAtMost(0.02),
    )
    .note(format!(
        "gateway-sim's usage requests over the window ({}) per successful check ({})",
        calls_after - calls_before,
        d[0]
    ));
    Ok(vec![row, calls_row])
}

async fn quota_round(env: &BenchEnv, sizes: &crate::Sizes) -> anyhow::Result<Vec<Row>> {
    let n: u64 = if sizes.quick { 25_000 } else { 100_000 };
    let stores = seed(env, n, 3600).await?;
    // The crossing cards: a 100 MB package, and 1,000 MB used at the carrier.
    let step = (n / CROSSING).max(1);
    let crossing: Vec<u64> = (1..=CROSSING)
        .map(|k| k * step)
        .filter(|id| *id <= n)
        .collect();
    let ids = crossing
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    env.db
        .execute_unprepared(&format!(
            "UPDATE tb_package_usage SET data_limit_mb = 100 WHERE iot_card_id IN ({ids})"
        ))
        .await
        .context("limit the crossing cards' packages")?;
    let specs: Vec<SimCardSpec> = (1..=n)
        .map(|id| SimCardSpec {
            month_total_mb: if crossing.contains(&id) {
                Decimal::from(1000)
            } else {
                Decimal::ZERO
            },
            growth_mb_per_query: Some(Decimal::ZERO),
            ..SimCardSpec::new(fleet::iccid(id))
        })
        .collect();
    let sim = crate::sim::start(specs).await?;
    let (w, redis, prefix) = node(env, &stores, &sim, (QUOTA_PER_SEC, BATCH), "quota").await?;
    let counting = w.counting[TaskType::Carddata.index()].clone();
    load_due(&w.queue, n).await?;
    // Their previous usage poll found them near the limit: it picked them in the decisive
    // lane at their due time, as a handler does (`stop_resume::decisive_poll`).
    for id in &crossing {
        let card = CardId(*id as i64);
        let due = w
            .queue
            .score_of(card, TaskType::Carddata)
            .await?
            .context("a crossing card is queued")?;
        let at = DateTime::<Utc>::from_timestamp_millis((due * 1000.0).round() as i64)
            .context("a queue score is a time")?;
        w.queue
            .reschedule_decisive(card, TaskType::Carddata, at)
            .await?;
    }
    let floor = n as f64 / f64::from(BATCH) / f64::from(QUOTA_PER_SEC);
    let deadline = Duration::from_secs_f64(floor * 4.0 + 30.0);

    let shutdown = CancellationToken::new();
    let running = tokio::spawn(w.scheduler.run(shutdown.clone()));
    let started = Instant::now();
    let mut round = None;
    let mut all_stopped = None;
    while started.elapsed() < deadline && (round.is_none() || all_stopped.is_none()) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if round.is_none() && counting.snapshot()[0] >= n {
            round = Some(started.elapsed().as_secs_f64());
        }
        if all_stopped.is_none() && stopped(&env.db, &ids).await? >= crossing.len() as u64 {
            all_stopped = Some(started.elapsed().as_secs_f64());
        }
    }
    let counts = counting.snapshot();
    let stopped_at_end = stopped(&env.db, &ids).await?;
    let calls = usage_calls(&sim);
    shutdown.cancel();
    running.await.context("scheduler task")?;
    tear_down(env, sim, &redis, &prefix).await?;
    println!(
        "  quota round: {n} cards, {} ok, {} failed, {} requeued; {calls} usage calls; round {round:?} s, crossing cards stopped {stopped_at_end}/{} at {all_stopped:?} s (floor {floor:.1} s)",
        counts[0],
        counts[1],
        counts[2],
        crossing.len()
    );
    let round_secs = round.unwrap_or(deadline.as_secs_f64());
    let round_row = Row::new(
        format!(
            "usage round of {} cards under a {QUOTA_PER_SEC} calls/s, {BATCH}-card quota",
            fmt_num(n as f64)
        ),
        round_secs,
        "s",
        Some((floor, "the quota's floor, N / 100 / 50 s")),
        Target::RatioAtMost(1.1),
    )
    .note(format!(
        "every card polled once (interval 1 h); {} ok, {} failed, {} requeued (pool full or no budget slot); {calls} usage calls for {n} cards; the budget is the cluster-wide GCRA bucket of carrier 1; a 10M-card round at this quota is the same ratio over 2,000 s; OneLink's assumed batch queries turned on at both ends (off by default)",
        counts[0], counts[1], counts[2]
    ))
    .note(if round.is_none() {
        format!("the round did not end within {:.0} s", deadline.as_secs_f64())
    } else {
        "the round ended".to_owned()
    });
    let starvation_row = Row::new(
        format!(
            "cards over their limit stopped within the round ({} of {})",
            crossing.len(),
            fmt_num(n as f64)
        ),
        stopped_at_end as f64,
        "cards",
        None,
        Target::FigureAtLeast(crossing.len() as f64),
    )
    .note(format!(
        "their stop commands share the carrier's 50 calls/s with the usage batches; the last stopped {} s after the round started",
        all_stopped.map_or("never".to_owned(), |s| format!("{s:.1}"))
    ));
    let first_row = Row::new(
        format!(
            "cards over their limit, picked by their last poll, all stopped after ({} of {})",
            crossing.len(),
            fmt_num(n as f64)
        ),
        all_stopped.unwrap_or(deadline.as_secs_f64()),
        "s",
        Some((round_secs, "the round's time, this run")),
        Target::RatioAtMost(0.5),
    )
    .note("the decisive lane (polling:decisive:carddata) puts them before the due backlog; in due order they are spread over the whole round, the last near its end");
    Ok(vec![round_row, starvation_row, first_row])
}

/// Usage checks/s under the quota, `batch` cards a call: `n` cards due at once (interval an
/// hour, so none comes twice), counted over `window` after the warm-up.
async fn checks_under_quota(
    env: &BenchEnv,
    n: u64,
    batch: u32,
    window: Duration,
) -> anyhow::Result<(f64, u64)> {
    let stores = seed(env, n, 3600).await?;
    let specs: Vec<SimCardSpec> = (1..=n)
        .map(|id| SimCardSpec {
            growth_mb_per_query: Some(Decimal::ONE),
            ..SimCardSpec::new(fleet::iccid(id))
        })
        .collect();
    let sim = crate::sim::start(specs).await?;
    let part = format!("quota-{batch}");
    let (w, redis, prefix) = node(env, &stores, &sim, (QUOTA_PER_SEC, batch), &part).await?;
    let counting = w.counting[TaskType::Carddata.index()].clone();
    load_due(&w.queue, n).await?;
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(w.scheduler.run(shutdown.clone()));
    tokio::time::sleep(WARM_UP).await;
    let (before, calls_before) = (counting.snapshot()[0], usage_calls(&sim));
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let (after, calls_after) = (counting.snapshot()[0], usage_calls(&sim));
    let secs = started.elapsed().as_secs_f64();
    shutdown.cancel();
    running.await.context("scheduler task")?;
    tear_down(env, sim, &redis, &prefix).await?;
    println!(
        "  under the quota, {batch} a call: {} checks, {} usage calls in {secs:.1} s",
        after - before,
        calls_after - calls_before
    );
    Ok(((after - before) as f64 / secs, calls_after - calls_before))
}

/// Scenario 3 (module doc).
async fn under_quota(env: &BenchEnv, sizes: &crate::Sizes) -> anyhow::Result<Row> {
    // Enough due cards that the batched node is still busy when its window closes.
    let n: u64 = if sizes.quick { 20_000 } else { 60_000 };
    let window = Duration::from_secs(10);
    let (batched, batched_calls) = checks_under_quota(env, n, BATCH, window).await?;
    let (per_card, per_card_calls) = checks_under_quota(env, n, 1, window).await?;
    Ok(Row::new(
        format!("usage checks under a {QUOTA_PER_SEC} calls/s quota, {BATCH} cards a call"),
        batched,
        "checks/s",
        Some((per_card, "one card a call, same account and quota, this run")),
        Target::RatioAtLeast(3.0),
    )
    .note(format!(
        "{n} cards due at once on the OneLink adapter; {batched_calls} usage calls batched, {per_card_calls} per card, in {} s windows; batched stops short of {BATCH}× when the write path, not the quota, is the limit; batched: OneLink's assumed batch queries turned on at both ends (off by default), per card: the documented single call",
        window.as_secs()
    )))
}

/// Stops the sim, closes the node's Redis pool and removes its keys.
async fn tear_down(
    env: &BenchEnv,
    sim: SimHandle,
    redis: &fred::prelude::Pool,
    prefix: &str,
) -> anyhow::Result<()> {
    sim.shutdown().await?;
    redis
        .quit()
        .await
        .context("close the worker's Redis pool")?;
    env.clean_redis(prefix).await?;
    Ok(())
}

/// How many of the cards `ids` (a comma-separated list) are stopped.
async fn stopped(db: &DatabaseConnection, ids: &str) -> anyhow::Result<u64> {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!("SELECT count(*) FROM tb_iot_card WHERE network_status = 0 AND id IN ({ids})"),
        ))
        .await
        .context("count stopped cards")?
        .context("no count")?;
    Ok(u64::try_from(row.try_get_by_index::<i64>(0).context("count")?).unwrap_or(0))
}
