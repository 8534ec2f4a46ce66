//! Measures the initializer against `redis-cli --pipe` loading the same ZADD members.
//!
//! ```text
//! CMP_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \
//! CMP_TEST_REDIS_URL=redis://127.0.0.1:6379 \
//! cargo run --release -p lifecycle --example init_bench -- 1000000
//! ```
//!
//! Everything lives in a fresh database and a Redis key prefix of its own (test-support),
//! removed when the run ends. Optional: `INIT_WRITERS`, `INIT_PIPELINE`, `INIT_POOL`.

use anyhow::Context as _;
use domain::{
    CardCategory, CarrierId, Intervals, ManualClock, NetworkStatus, NewCard, PollingConfigInput,
    RealNameStatus, TaskType,
};
use lifecycle::{CardInitializer, InitMode, InitSettings, first_score};
use polling_config::PollingConfigManager;
use polling_queue::Keys;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Instant;

const SHARDS: u32 = 16;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cards: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let env = test_support::TestEnv::new().await?;
    let stores = store::Stores::new(env.db.conn.clone());
    let intervals = Intervals {
        realname_interval_secs: Some(3600),
        carddata_interval_secs: Some(1800),
        package_interval_secs: Some(7200),
        protect_interval_secs: Some(600),
    };
    stores
        .configs
        .insert(&PollingConfigInput {
            name: "all".into(),
            priority: 1,
            enabled: true,
            card_condition: None,
            card_category: None,
            carrier_id: None,
            intervals,
        })
        .await?;
    let t = Instant::now();
    let fleet: Vec<NewCard> = (0..cards)
        .map(|n| NewCard {
            iccid: format!("8986{n:014}"),
            msisdn: None,
            carrier_id: CarrierId(1),
            card_category: CardCategory::Normal,
            status: 1,
            real_name_status: RealNameStatus::Verified,
            network_status: NetworkStatus::Online,
            enable_polling: true,
            device_id: None,
        })
        .collect();
    let mut ids = Vec::with_capacity(fleet.len());
    for chunk in fleet.chunks(100_000) {
        ids.extend(stores.cards.insert_bulk(chunk).await?);
    }
    drop(fleet);
    eprintln!("inserted {cards} cards in {:?}", t.elapsed());

    let pool = env.redis.pool_of(env_or("INIT_POOL", 4)).await?;
    let keys = Keys::new(env.redis.prefix.clone());
    let configs = PollingConfigManager::new(stores.configs.clone(), pool.clone(), keys.clone());
    configs.start().await?;
    let clock = ManualClock::new(chrono::Utc::now());
    let settings = InitSettings {
        shard_count: SHARDS,
        writers: env_or("INIT_WRITERS", 4),
        commands_per_pipeline: env_or("INIT_PIPELINE", 50),
        ..InitSettings::default()
    };
    let init = CardInitializer::new(
        stores.cards.clone(),
        configs,
        pool.clone(),
        keys.clone(),
        Arc::new(clock.clone()),
        settings,
    );
    let report = init.run(InitMode::Initial).await?;
    let members = report.added;
    let init_secs = report.elapsed.as_secs_f64();
    println!(
        "initializer: {cards} cards, {members} members in {init_secs:.2} s ({:.0} members/s), settings {settings:?}",
        members as f64 / init_secs
    );
    // Free the memory before the comparison run.
    let queues = keys.all_shard_queues(SHARDS);
    let _: i64 = fred::prelude::KeysInterface::unlink(&pool, queues).await?;

    // The same members with redis-cli --pipe: 1,000 per ZADD, scratch keys under the prefix.
    let now = clock.now_secs();
    let path = std::env::temp_dir().join(format!(
        "{}zadd.resp",
        env.redis.prefix.trim_end_matches(':')
    ));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let mut written = 0u64;
    for shard in 0..SHARDS {
        let of_shard: Vec<i64> = ids
            .iter()
            .map(|id| id.get())
            .filter(|id| id.rem_euclid(i64::from(SHARDS)) == i64::from(shard))
            .collect();
        for task in TaskType::ALL {
            let interval = intervals.get(task).map_or(1, |d| d.as_secs());
            let key = format!("{}scratch:shard:{shard}:queue:{task}", env.redis.prefix);
            for chunk in of_shard.chunks(1_000) {
                write!(
                    out,
                    "*{}\r\n$4\r\nZADD\r\n${}\r\n{key}\r\n",
                    2 + 2 * chunk.len(),
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
    out.flush()?;
    drop(out);
    let t = Instant::now();
    let status = std::process::Command::new("redis-cli")
        .args(["-u", &env.redis.url, "--pipe"])
        .stdin(std::fs::File::open(&path)?)
        .stdout(std::process::Stdio::null())
        .status()
        .context("run redis-cli --pipe")?;
    let pipe_secs = t.elapsed().as_secs_f64();
    std::fs::remove_file(&path)?;
    anyhow::ensure!(status.success(), "redis-cli --pipe failed: {status}");
    println!(
        "redis-cli --pipe: {written} members in {pipe_secs:.2} s ({:.0} members/s)",
        written as f64 / pipe_secs
    );
    println!(
        "ratio initializer / redis-cli --pipe: {:.2}",
        init_secs / pipe_secs
    );
    Ok(())
}

trait NowSecs {
    fn now_secs(&self) -> i64;
}

impl NowSecs for ManualClock {
    fn now_secs(&self) -> i64 {
        domain::Clock::now(self).timestamp()
    }
}
