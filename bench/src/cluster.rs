//! `--redis-cluster`: the dequeue and full-cycle figures on a three-master Redis Cluster next
//! to the single Redis, in the same run.
//!
//! The cluster is `CMP_BENCH_REDIS_CLUSTER_URL`, or the local one of
//! `scripts/redis-cluster.sh start 7101 7102 7103` (started when absent, left running). Its keys
//! are the bench's own (`bench:` prefix), cleaned before and after.
//!
//! * Dequeue: M due members spread over the 16 carddata shards; 16 tasks, one per shard, call
//!   `dequeue_ready(batch 1,000)` until nothing is due: what the scheduler does each tick. On
//!   the cluster the shards live on three nodes. Rounds alternate single / cluster.
//! * Full cycle: the `cycle` scenario's run (real scheduler, no-op handlers that reschedule)
//!   once per Redis.
//!
//! On one machine the three nodes share its cores with the bench and each other: the figures
//! say what the cluster costs per call (routing, a connection per node), not what three
//! machines would carry.

use crate::cycle;
use crate::dequeue::median;
use crate::env::{BenchEnv, PREFIX};
use crate::report::{Row, Target, fmt_num};
use anyhow::Context;
use domain::{CardId, SystemClock, TaskType};
use polling_queue::{Keys, PollingQueueManager, QueueSettings};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BATCH: usize = 1_000;
const SHARDS: u32 = 16;
const CI_PORTS: [&str; 3] = ["7101", "7102", "7103"];

pub(crate) struct Sizes {
    pub(crate) dequeue_members: usize,
    pub(crate) rounds: usize,
    pub(crate) cycle_cards: u64,
    pub(crate) cycle_window: Duration,
}

pub(crate) async fn run(single: &BenchEnv, sizes: &Sizes) -> anyhow::Result<Vec<Row>> {
    let url = cluster_url()?;
    println!("  cluster: {url}");
    let cluster = single
        .with_redis(&url)
        .await
        .context("connect to the cluster")?;
    let result = measure(single, &cluster, sizes).await;
    cluster.clean_redis(PREFIX).await?;
    result
}

async fn measure(single: &BenchEnv, cluster: &BenchEnv, s: &Sizes) -> anyhow::Result<Vec<Row>> {
    let (mut on_single, mut on_cluster) = (Vec::new(), Vec::new());
    for round in 0..s.rounds.max(1) {
        on_single.push(dequeue_all_shards(single, s.dequeue_members).await?);
        on_cluster.push(dequeue_all_shards(cluster, s.dequeue_members).await?);
        println!(
            "  round {}: 16-shard dequeue single {:.0}/s, cluster {:.0}/s",
            round + 1,
            on_single[round],
            on_cluster[round]
        );
    }
    let (d_single, d_cluster) = (median(&mut on_single), median(&mut on_cluster));
    let dequeue = Row::new(
        format!(
            "cluster: dequeue, {} due cards over 16 shards, batch {BATCH}",
            fmt_num(s.dequeue_members as f64)
        ),
        d_cluster,
        "cards/s",
        Some((d_single, "cards/s on the single Redis")),
        Target::RatioAtLeast(0.5),
    )
    .note(format!(
        "three masters on this machine; median of {} alternating rounds; cluster {on_cluster:.0?}, single {on_single:.0?}",
        s.rounds.max(1)
    ));

    let c_single = cycle::one(single, s.cycle_cards, s.cycle_window).await?;
    let c_cluster = cycle::one(cluster, s.cycle_cards, s.cycle_window).await?;
    let full = Row::new(
        format!(
            "cluster: full cycle, no-op handlers, {} due cards",
            fmt_num(s.cycle_cards as f64)
        ),
        c_cluster.cards_per_sec,
        "cards/s",
        Some((c_single.cards_per_sec, "cards/s on the single Redis")),
        Target::RatioAtLeast(0.5),
    )
    .note(format!(
        "cluster: {} handled in {:.1} s ({} failed); single: {} in {:.1} s ({} failed)",
        c_cluster.handled,
        c_cluster.secs,
        c_cluster.failed,
        c_single.handled,
        c_single.secs,
        c_single.failed
    ));
    Ok(vec![dequeue, full])
}

/// Loads `members` due cards over the 16 carddata shards, then drains every shard at once.
/// Returns cards/s.
async fn dequeue_all_shards(env: &BenchEnv, members: usize) -> anyhow::Result<f64> {
    let prefix = format!("{PREFIX}cluster-dequeue:");
    env.clean_redis(&prefix).await?;
    let queue = PollingQueueManager::new(
        env.redis.clone(),
        Keys::new(prefix.clone()),
        QueueSettings {
            shard_count: SHARDS,
            ..QueueSettings::default()
        },
        Arc::new(SystemClock),
    );
    cycle::load_due(&queue, members as u64).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let drains = (0..SHARDS).map(|shard| {
        let queue = queue.clone();
        tokio::spawn(async move {
            let mut taken = 0usize;
            loop {
                let got: Vec<CardId> = queue
                    .dequeue_ready(shard, TaskType::Carddata, BATCH)
                    .await?;
                if got.is_empty() {
                    return Ok::<_, anyhow::Error>(taken);
                }
                taken += got.len();
            }
        })
    });
    let mut taken = 0;
    for drain in futures::future::join_all(drains).await {
        taken += drain.context("dequeue task")??;
    }
    let secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        taken == members,
        "dequeue_ready returned {taken} of {members} members"
    );
    env.clean_redis(&prefix).await?;
    Ok(taken as f64 / secs)
}

/// `CMP_BENCH_REDIS_CLUSTER_URL`, or the CI cluster on 7101–7103 (started when absent).
fn cluster_url() -> anyhow::Result<String> {
    if let Ok(url) = std::env::var("CMP_BENCH_REDIS_CLUSTER_URL")
        && !url.trim().is_empty()
    {
        return Ok(url);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/redis-cluster.sh");
    let status = std::process::Command::new(script)
        .arg("start")
        .args(CI_PORTS)
        .status()
        .with_context(|| format!("run {script}"))?;
    anyhow::ensure!(status.success(), "{script} start failed");
    let out = std::process::Command::new(script)
        .arg("url")
        .args(CI_PORTS)
        .output()
        .with_context(|| format!("run {script} url"))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
