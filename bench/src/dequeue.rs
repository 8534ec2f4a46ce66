//! Scenario 2: `dequeue_ready` against a bare Lua loop doing the same work.
//!
//! M due members (strictly increasing scores, as the initializer spreads them) go into one
//! shard key; `PollingQueueManager::dequeue_ready(batch 1,000)` is called until nothing is due.
//! The reference loads an identical key and runs, the same way, a bare script: ZRANGEBYSCORE
//! LIMIT and a ZADD re-scoring the members to the lease deadline (strictly increasing, in
//! chunks of 1,000 like the production script), returning the members. Rounds alternate
//! ours / reference so that the noise of the shared machine falls on both; the medians count.

use crate::env::{BenchEnv, PREFIX};
use crate::report::{Row, Target};
use anyhow::Context;
use domain::{SystemClock, TaskType};
use fred::prelude::*;
use fred::types::Value;
use fred::types::scripts::Script;
use polling_queue::{Keys, PollingQueueManager, QueueSettings, to_score};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BATCH: usize = 1_000;
const LEASE_SECS: f64 = 300.0;

const BARE: &str = r"
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local deadline = tonumber(ARGV[3])
local n = #due
local i = 1
while i <= n do
  local last = math.min(i + 999, n)
  local args = {}
  for j = i, last do
    args[#args + 1] = deadline + (j - 1) * 0.000001
    args[#args + 1] = due[j]
  end
  redis.call('ZADD', KEYS[1], unpack(args))
  i = last + 1
end
return due
";

pub(crate) async fn run(env: &BenchEnv, members: usize, rounds: usize) -> anyhow::Result<Vec<Row>> {
    let prefix = format!("{PREFIX}dequeue:");
    let keys = Keys::new(prefix.clone());
    let queue = PollingQueueManager::new(
        env.redis.clone(),
        keys.clone(),
        QueueSettings::default(),
        Arc::new(SystemClock),
    );
    let ours_key = keys.shard_queue(0, TaskType::Carddata);
    let ref_key = format!("{prefix}reference");
    let script = Script::from_lua(BARE);
    let (mut ours, mut reference) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let dequeue = async || {
            let got = queue
                .dequeue_ready(0, TaskType::Carddata, BATCH)
                .await
                .context("dequeue_ready")?;
            Ok(got.len())
        };
        ours.push(drain(env, &prefix, &ours_key, members, "dequeue_ready", dequeue).await?);

        let bare = async || {
            let now = to_score(chrono::Utc::now());
            let args = vec![
                Value::from(now),
                Value::from(BATCH as i64),
                Value::from(now + LEASE_SECS),
            ];
            let got: Vec<String> = script
                .evalsha_with_reload(env.redis.next(), vec![ref_key.as_str()], args)
                .await
                .context("bare dequeue script")?;
            Ok(got.len())
        };
        reference.push(drain(env, &prefix, &ref_key, members, "the bare script", bare).await?);
        println!(
            "  round {}: dequeue_ready {:.0}/s, bare script {:.0}/s",
            round + 1,
            ours[round],
            reference[round]
        );
    }
    let (o, r) = (median(&mut ours), median(&mut reference));
    let row = Row::new(
        format!(
            "dequeue, {} due cards, batch {BATCH}",
            crate::report::fmt_num(members as f64)
        ),
        o,
        "cards/s",
        Some((r, "cards/s, bare ZRANGEBYSCORE+ZADD Lua")),
        Target::RatioAtLeast(0.8),
    )
    .note(format!(
        "median of {rounds} alternating rounds; ours {ours:.0?}, reference {reference:.0?}"
    ));
    Ok(vec![row])
}

/// Loads `members` due members into `key`, calls `take` (one dequeue, the number of members it
/// returned) until the key has none due, then empties the prefix. Members per second.
async fn drain(
    env: &BenchEnv,
    prefix: &str,
    key: &str,
    members: usize,
    what: &str,
    mut take: impl AsyncFnMut() -> anyhow::Result<usize>,
) -> anyhow::Result<f64> {
    load(&env.redis, key, members).await?;
    let started = Instant::now();
    let mut taken = 0;
    loop {
        let got = take().await?;
        if got == 0 {
            break;
        }
        taken += got;
    }
    let secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        taken == members,
        "{what} returned {taken} of {members} members"
    );
    env.clean_redis(prefix).await?;
    Ok(taken as f64 / secs)
}

/// `members` due members with strictly increasing scores in the past, 1,000 per ZADD.
async fn load(redis: &Pool, key: &str, members: usize) -> anyhow::Result<()> {
    let past = to_score(chrono::Utc::now()) - 3_600.0;
    let all: Vec<(f64, String)> = (0..members)
        .map(|i| (past + i as f64 * 1e-3, (i * 16).to_string()))
        .collect();
    for window in all.chunks(100_000) {
        let pipe = redis.next().pipeline();
        for chunk in window.chunks(1_000) {
            let _: () = pipe
                .zadd(key, None, None, false, false, chunk.to_vec())
                .await?;
        }
        let _: Vec<Value> = pipe.all().await.context("load the queue")?;
    }
    // Let the server settle after the bulk write before timing.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(())
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
