//! Dequeue throughput of the lease script on one shard key.
//!
//! Loads 1,000,000 due members into one queue key (under a throw-away prefix), dequeues them
//! with batch 1,000 until none is due, prints members/s, and deletes the key.
//!
//! `cargo run --release -p polling-queue --example dequeue_bench`
//! (Redis from `CMP_BENCH_REDIS_URL`, default `redis://127.0.0.1:6379`).

use anyhow::Context as _;
use domain::{SystemClock, TaskType};
use fred::prelude::*;
use fred::types::Value;
use polling_queue::{Keys, PollingQueueManager, QueueSettings, to_score};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MEMBERS: usize = 1_000_000;
const BATCH: usize = 1_000;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url =
        std::env::var("CMP_BENCH_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let pool = Builder::from_config(Config::from_url(&url).context("redis url")?)
        .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(60))
        .build_pool(2)?;
    pool.init()
        .await
        .with_context(|| format!("connect to {url}"))?;

    let keys = Keys::new(format!(
        "bench{}_{:08x}:",
        chrono::Utc::now().timestamp(),
        rand::random::<u32>()
    ));
    let qm = PollingQueueManager::new(
        pool.clone(),
        keys.clone(),
        QueueSettings::default(),
        Arc::new(SystemClock),
    );
    let key = keys.shard_queue(0, TaskType::Carddata);

    let loading = Instant::now();
    let past = to_score(chrono::Utc::now()) - 3_600.0;
    let members: Vec<(f64, String)> = (0..MEMBERS)
        .map(|i| (past + i as f64 * 1e-3, (i * 16).to_string()))
        .collect();
    for window in members.chunks(100_000) {
        let pipe = pool.next().pipeline();
        for chunk in window.chunks(1_000) {
            let _: () = pipe
                .zadd(key.as_str(), None, None, false, false, chunk.to_vec())
                .await?;
        }
        let _: Vec<Value> = pipe.all().await?;
    }
    let load_secs = loading.elapsed().as_secs_f64();
    println!(
        "loaded {MEMBERS} members in {load_secs:.2} s ({:.0} members/s)",
        MEMBERS as f64 / load_secs
    );

    let start = Instant::now();
    let mut taken = 0;
    loop {
        let got = qm.dequeue_ready(0, TaskType::Carddata, BATCH).await?;
        if got.is_empty() {
            break;
        }
        taken += got.len();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "dequeued {taken} members with batch {BATCH} in {secs:.2} s: {:.0} members/s",
        taken as f64 / secs
    );

    let _: i64 = pool.del(key.as_str()).await?;
    anyhow::ensure!(
        taken == MEMBERS,
        "expected {MEMBERS} members, dequeued {taken}"
    );
    Ok(())
}
