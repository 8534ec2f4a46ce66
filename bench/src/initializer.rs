//! Scenario 1 (initializer vs `redis-cli --pipe`) and 5 (Redis memory per entry).
//!
//! N cards are seeded in PostgreSQL; the real `CardInitializer` (`InitMode::Initial`, default
//! settings, a Redis pool of the worker's default size) fills the four queues. Then the very
//! same `ZADD NX` members (same key layout, same scores from `first_score`, 1,000 members
//! a command) are written as a protocol file and loaded by `redis-cli --pipe` into a scratch
//! prefix. `INFO memory` around both loads gives bytes per entry for ours and for the reference.

use crate::env::{BenchEnv, PREFIX, info_memory, redis_cpu_secs, redis_pool, wait_lazyfree};
use crate::report::{Row, Target};
use crate::{fleet, rss};
use anyhow::Context;
use domain::{Intervals, SystemClock, TaskType};
use fred::prelude::ClientLike as _;
use lifecycle::{CardInitializer, InitMode, InitSettings, first_score};
use polling_config::PollingConfigManager;
use polling_queue::Keys;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Instant;

const SHARDS: u32 = 16;
/// The worker's default `CMP_REDIS_POOL_SIZE`.
const WORKER_REDIS_POOL: usize = 8;

const INTERVALS: Intervals = Intervals {
    realname_interval_secs: Some(3600),
    carddata_interval_secs: Some(1800),
    package_interval_secs: Some(7200),
    protect_interval_secs: Some(600),
};

pub(crate) async fn run(env: &BenchEnv, cards: u64) -> anyhow::Result<Vec<Row>> {
    let size = format!("{} cards x 4 types", crate::report::fmt_num(cards as f64));
    fleet::truncate(&env.db).await?;
    let seed_secs = fleet::seed_cards(&env.db, cards).await?;
    let stores = store::Stores::new(env.db.clone());
    fleet::seed_config(&stores, INTERVALS).await?;
    fleet::vacuum(&env.db).await?;
    println!("  seeded {cards} cards in {seed_secs:.1} s");

    let prefix = format!("{PREFIX}init:");
    let keys = Keys::new(prefix.clone());
    let pool = redis_pool(&env.redis_url, WORKER_REDIS_POOL).await?;
    let configs = PollingConfigManager::new(stores.configs.clone(), pool.clone(), keys.clone());
    configs.start().await.context("load polling configs")?;
    let init = CardInitializer::new(
        stores.cards.clone(),
        configs,
        pool.clone(),
        keys.clone(),
        Arc::new(SystemClock),
        InitSettings {
            shard_count: SHARDS,
            ..InitSettings::default()
        },
    );

    wait_lazyfree(&env.redis).await?;
    let mem_before = info_memory(&env.redis, "used_memory").await?;
    let sampler = rss::Sampler::start();
    let cpu_before = redis_cpu_secs(&env.redis).await?;
    let now = chrono::Utc::now().timestamp();
    let report = init
        .run(InitMode::Initial)
        .await
        .context("run the initializer")?;
    let rss_start = sampler.start;
    let rss_peak = sampler.finish();
    let ours_secs = report.elapsed.as_secs_f64();
    let ours_cpu = redis_cpu_secs(&env.redis).await? - cpu_before;
    let mem_after = info_memory(&env.redis, "used_memory").await?;
    let ours_per_entry = mem_after.saturating_sub(mem_before) as f64 / report.added.max(1) as f64;
    println!(
        "  initializer: {} entries in {ours_secs:.1} s (Redis CPU {ours_cpu:.1} s)",
        report.added
    );
    env.clean_redis(&prefix).await?;
    pool.quit().await.context("close the initializer's pool")?;

    // The reference: the same members, written by redis-cli --pipe.
    let scratch = format!("{PREFIX}scratch:");
    let ids = fleet::card_ids(&env.db).await?;
    let path = crate::report::report_path().with_file_name("zadd.resp");
    let (p, s) = (path.clone(), scratch.clone());
    let written = tokio::task::spawn_blocking(move || write_protocol(&p, &s, &ids, now))
        .await
        .context("protocol writer")??;
    wait_lazyfree(&env.redis).await?;
    let pipe_before = info_memory(&env.redis, "used_memory").await?;
    let pipe_cpu_before = redis_cpu_secs(&env.redis).await?;
    let (url, p) = (env.redis_url.clone(), path.clone());
    let pipe_secs = tokio::task::spawn_blocking(move || redis_cli_pipe(&url, &p))
        .await
        .context("redis-cli runner")??;
    let pipe_cpu = redis_cpu_secs(&env.redis).await? - pipe_cpu_before;
    let pipe_after = info_memory(&env.redis, "used_memory").await?;
    let pipe_per_entry = pipe_after.saturating_sub(pipe_before) as f64 / written.max(1) as f64;
    let _ = std::fs::remove_file(&path);
    env.clean_redis(&scratch).await?;
    println!(
        "  redis-cli --pipe: {written} entries in {pipe_secs:.1} s (Redis CPU {pipe_cpu:.1} s)"
    );

    let init_row = Row::new(
        format!("initializer, {size}"),
        ours_secs,
        "s",
        Some((pipe_secs, "s, redis-cli --pipe, same ZADD NX")),
        Target::RatioAtMost(1.3),
    )
    .note(format!(
        "{} entries ({:.0}/s ours, {:.0}/s pipe); Redis CPU {ours_cpu:.1} s ours, {pipe_cpu:.1} s pipe; {} cards unmatched; seeding PostgreSQL took {seed_secs:.1} s (not timed)",
        report.added,
        report.added as f64 / ours_secs,
        written as f64 / pipe_secs,
        report.unmatched
    ));
    let mem_row = Row::new(
        format!("Redis memory per scheduled entry ({} entries)", report.added),
        ours_per_entry,
        "B",
        Some((pipe_per_entry, "B, same members via redis-cli --pipe")),
        Target::FigureAtMost(125.0),
    )
    .note("used_memory delta / entries; Redis is shared, so other clients' writes during the load add noise");
    let rss_row = Row::new(
        format!("worker RSS during the initializer ({size})"),
        rss::mb(rss_peak),
        "MB",
        Some((rss::mb(rss_start), "MB at start")),
        Target::FigureAtMost(300.0),
    );
    anyhow::ensure!(
        written == report.added,
        "the reference loaded {written} entries, the initializer {}",
        report.added
    );
    Ok(vec![init_row, mem_row, rss_row])
}

/// The initializer's commands as RESP: per shard and type, `ZADD key NX` of 1,000 members.
fn write_protocol(
    path: &std::path::Path,
    scratch: &str,
    ids: &[i64],
    now: i64,
) -> anyhow::Result<u64> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let file = std::fs::File::create(path).with_context(|| format!("create {}", path.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let keys = Keys::new(scratch);
    let mut written = 0u64;
    for shard in 0..SHARDS {
        let of_shard: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|id| id.rem_euclid(i64::from(SHARDS)) == i64::from(shard))
            .collect();
        for task in TaskType::ALL {
            let Some(interval) = INTERVALS.get(task).map(|d| d.as_secs()) else {
                continue;
            };
            let key = keys.shard_queue(shard, task);
            for chunk in of_shard.chunks(1_000) {
                write!(
                    out,
                    "*{}\r\n$4\r\nZADD\r\n${}\r\n{key}\r\n$2\r\nNX\r\n",
                    3 + 2 * chunk.len(),
                    key.len()
                )?;
                for id in chunk {
                    let (score, member) = (
                        first_score(*id, task, interval, now).to_string(),
                        id.to_string(),
                    );
                    write!(
                        out,
                        "${}\r\n{score}\r\n${}\r\n{member}\r\n",
                        score.len(),
                        member.len()
                    )?;
                }
                written += chunk.len() as u64;
            }
        }
    }
    out.flush().context("write the protocol file")?;
    Ok(written)
}

fn redis_cli_pipe(url: &str, path: &std::path::Path) -> anyhow::Result<f64> {
    let input = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let started = Instant::now();
    let out = std::process::Command::new("redis-cli")
        .args(["-u", url, "--pipe"])
        .stdin(input)
        .output()
        .context("run redis-cli --pipe (is redis-cli installed?)")?;
    let secs = started.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&out.stdout);
    anyhow::ensure!(out.status.success(), "redis-cli --pipe failed: {text}");
    anyhow::ensure!(
        text.contains("errors: 0"),
        "redis-cli --pipe reported errors: {text}"
    );
    Ok(secs)
}
