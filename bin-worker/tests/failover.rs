//! Redis Cluster faults under a running worker: each test starts a cluster of its
//! own with three masters and one replica each (`scripts/redis-cluster.sh`, started and
//! stopped by the test) and runs `cmp-worker run` on a fleet there.
//!
//! - SIGKILL of the master that holds a shard queue: after the replica took over, every card
//!   is polled again and `cmp-worker check` passes (after `check --repair` if the failover lost
//!   writes: replication is asynchronous, so the last writes acknowledged by the killed master
//!   may be gone).
//! - That master restarted at once with no data (no persistence, restarted before the cluster
//!   fails it over): its slots come back empty while `polling:init:progress`, on another
//!   node, still says completed. The worker notices by the slots' canaries, repairs by itself,
//!   and `cmp-worker check` passes with no repair of ours.

mod common;

use common::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use test_support::{TestDb, TestEnv, TestRedis};
use tokio::process::Command;

const HOST: &str = "127.0.0.1";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/redis-cluster.sh")
}

/// A test's cluster on six ports of its own; stopped (SHUTDOWN NOSAVE, directories removed)
/// on drop.
struct Cluster {
    ports: [&'static str; 6],
    dir: PathBuf,
}

impl Cluster {
    async fn start(ports: [&'static str; 6], name: &str) -> anyhow::Result<Cluster> {
        let cluster = Cluster {
            ports,
            dir: std::env::temp_dir().join(name),
        };
        // Leftovers of an interrupted run on these ports are this test's own: stop them first.
        let _ = cluster.script(&["stop"]).await?;
        // The script's default node timeout (2 s): under a loaded CI machine a shorter one
        // lets the nodes fail each other over for no reason.
        let out = cluster.script(&["start", "--replicas", "1"]).await?;
        anyhow::ensure!(
            out.status.success(),
            "redis-cluster.sh start failed (redis-server and redis-cli are needed): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(cluster)
    }

    /// `redis-cluster.sh <args> <the six ports>` (`restart` takes its one port in `args`).
    async fn script(&self, args: &[&str]) -> anyhow::Result<std::process::Output> {
        let mut cmd = Command::new(script());
        cmd.args(args).env("CMP_CLUSTER_DIR", &self.dir);
        if args.first() != Some(&"restart") {
            cmd.args(self.ports);
        }
        Ok(cmd.output().await?)
    }

    fn url(&self) -> String {
        let nodes: Vec<String> = self.ports[1..]
            .iter()
            .map(|p| format!("node={HOST}:{p}"))
            .collect();
        format!(
            "redis-cluster://{HOST}:{}?{}",
            self.ports[0],
            nodes.join("&")
        )
    }

    fn pid_of(&self, port: &str) -> anyhow::Result<String> {
        Ok(
            std::fs::read_to_string(self.dir.join(port).join("redis.pid"))?
                .trim()
                .to_owned(),
        )
    }

    /// A port other than `not`.
    fn live(&self, not: &str) -> &'static str {
        self.ports
            .iter()
            .copied()
            .find(|p| *p != not)
            .unwrap_or(self.ports[0])
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new(script())
            .arg("stop")
            .args(self.ports)
            .env("CMP_CLUSTER_DIR", &self.dir)
            .output();
    }
}

async fn redis_cli(port: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("redis-cli")
        .args(["-h", HOST, "-p", port])
        .args(args)
        .output()
        .await?;
    Ok(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

/// Port of the master serving `key`'s slot, asked of a live node.
async fn master_of(live: &str, key: &str) -> anyhow::Result<String> {
    let slot: u16 = redis_cli(live, &["cluster", "keyslot", key])
        .await?
        .trim()
        .parse()?;
    let nodes = redis_cli(live, &["cluster", "nodes"]).await?;
    for line in nodes.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
            continue;
        }
        let owns = fields[8..].iter().any(|range| {
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            matches!((lo.parse::<u16>(), hi.parse::<u16>()), (Ok(lo), Ok(hi)) if (lo..=hi).contains(&slot))
        });
        if owns {
            let port = fields[1]
                .split('@')
                .next()
                .and_then(|a| a.rsplit(':').next())
                .unwrap_or_default();
            return Ok(port.to_owned());
        }
    }
    anyhow::bail!("no live master serves slot {slot}:\n{nodes}")
}

/// `master_repl_offset` of the master on `port`, and the smallest offset its online replicas
/// acknowledged (`None` without one online).
async fn replication_offsets(port: &str) -> anyhow::Result<(u64, Option<u64>)> {
    let info = redis_cli(port, &["info", "replication"]).await?;
    let mut master = 0;
    let mut replica: Option<u64> = None;
    for line in info.lines() {
        if let Some(v) = line.strip_prefix("master_repl_offset:") {
            master = v.trim().parse()?;
        } else if line.starts_with("slave") && line.contains("state=online") {
            let offset = line
                .split(',')
                .find_map(|kv| kv.strip_prefix("offset="))
                .and_then(|v| v.parse::<u64>().ok());
            if let Some(o) = offset {
                replica = Some(replica.map_or(o, |r| r.min(o)));
            }
        }
    }
    Ok((master, replica))
}

/// Runs `cmp-worker <args>` to the end against the world: (exit code, stdout).
async fn cmp_worker(w: &World, args: &[&str]) -> anyhow::Result<(i32, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_cmp-worker"))
        .args(args)
        .env("CMP_DATABASE_URL", &w.env.db.url)
        .env("CMP_REDIS_URL", &w.env.redis.url)
        .env("CMP_REDIS_KEY_PREFIX", &w.env.redis.prefix)
        .env("CMP_LOG", "warn")
        .output()
        .await?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

fn usage_queries(w: &World) -> HashMap<usize, u32> {
    (0..w.cards.len())
        .map(|i| {
            let n = w.sim.state().card(&iccid(i)).map_or(0, |c| c.usage_queries);
            (i, n)
        })
        .collect()
}

/// A cluster on `ports`, a 48-card fleet on it polled every 2 s by `cmp-worker run` (its
/// health port returned), once every card was polled twice. The cluster comes first in the
/// tuple, so it is dropped last: the world's key cleanup needs it up.
async fn polling_fleet(
    ports: [&'static str; 6],
    name: &str,
) -> anyhow::Result<(Cluster, World, String, tokio::process::Child)> {
    let cluster = Cluster::start(ports, name).await?;
    let env = TestEnv {
        db: TestDb::new().await?,
        redis: TestRedis::on(cluster.url()),
    };
    let w = world_in(env, 48, 2, 1).await?;
    let bind = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr()?.to_string()
    };
    // A short lease: a reschedule the fault lost leaves its card leased, due again when the
    // lease ends (300 s by default).
    let worker = spawn_worker(
        &w,
        &[("CMP_WORKER_BIND", bind.as_str()), ("CMP_LEASE_SECS", "10")],
    )?;
    let polling = eventually(Duration::from_secs(60), || async {
        Ok(all_queued(&w).await? && polled_at_least(&w, 2) == w.cards.len())
    })
    .await?;
    anyhow::ensure!(polling, "every card polled twice before the fault");
    Ok((cluster, w, bind, worker))
}

/// `/readyz` green again within 30 s of `after`, then a clean SIGTERM shutdown.
async fn ready_then_stopped(
    bind: &str,
    worker: &mut tokio::process::Child,
    after: &str,
) -> anyhow::Result<()> {
    let ready = eventually(Duration::from_secs(30), || async {
        Ok(http_status(bind, "/readyz").await == Some(200))
    })
    .await?;
    anyhow::ensure!(ready, "/readyz green again after {after}");
    anyhow::ensure!(terminate(worker).await?.success(), "clean shutdown");
    Ok(())
}

#[tokio::test]
async fn polling_survives_a_master_killed_mid_run_and_check_passes() -> anyhow::Result<()> {
    let (cluster, w, bind, mut worker) = polling_fleet(
        ["7111", "7112", "7113", "7114", "7115", "7116"],
        "cmp-redis-cluster-failover",
    )
    .await?;
    assert_eq!(
        http_status(&bind, "/readyz").await,
        Some(200),
        "ready before"
    );

    let victim_key = w.queue.keys().shard_queue(0, domain::TaskType::Carddata);
    let victim = master_of(cluster.ports[0], &victim_key).await?;
    // The failover under test is the usual one: a replica that holds the fleet, behind its
    // master by the last asynchronous writes at most. Its replica must have acknowledged what
    // the master held once every card was polled twice (a replica still in its initial sync
    // holds nothing, and taking over then loses the node's queues: a different fault, the
    // one `check --repair` exists for).
    let (wanted, _) = replication_offsets(&victim).await?;
    let caught_up = eventually(Duration::from_secs(30), || async {
        Ok(replication_offsets(&victim)
            .await?
            .1
            .is_some_and(|acked| acked >= wanted))
    })
    .await?;
    assert!(
        caught_up,
        "the replica of {victim} caught up with offset {wanted}"
    );
    let pid = cluster.pid_of(&victim)?;
    let killed_at = std::time::Instant::now();
    let killed = Command::new("kill").args(["-KILL", &pid]).status().await?;
    assert!(killed.success(), "SIGKILL master {victim}");
    let live = cluster.live(&victim);

    // The replica is promoted: the cluster is whole again and another node serves the slot.
    let failed_over = eventually(Duration::from_secs(60), || async {
        let info = redis_cli(live, &["cluster", "info"]).await?;
        Ok(info.contains("cluster_state:ok")
            && master_of(live, &victim_key)
                .await
                .is_ok_and(|p| p != victim))
    })
    .await?;
    assert!(failed_over, "a replica took over from master {victim}");
    eprintln!(
        "failover: master {victim} killed, replica promoted after {:.1} s",
        killed_at.elapsed().as_secs_f64()
    );

    // Polling continues: every card is polled again after the failover.
    let at_failover = usage_queries(&w);
    let again = eventually(Duration::from_secs(60), || async {
        let now = usage_queries(&w);
        Ok(at_failover.iter().all(|(i, n)| now[i] > *n))
    })
    .await?;
    if !again {
        let now = usage_queries(&w);
        let stuck: Vec<usize> = at_failover
            .iter()
            .filter(|(i, n)| now[i] <= **n)
            .map(|(i, _)| *i)
            .collect();
        let mut scores = Vec::new();
        for i in &stuck {
            scores.push(
                w.queue
                    .score_of(w.cards[*i], domain::TaskType::Carddata)
                    .await,
            );
        }
        panic!(
            "{} of {} cards not polled again within 60 s of the promotion: {stuck:?}; their carddata scores: {scores:?}",
            stuck.len(),
            w.cards.len()
        );
    }
    eprintln!(
        "failover: every card polled again {:.1} s after the kill",
        killed_at.elapsed().as_secs_f64()
    );
    // Readiness asks every node it is connected to for `cluster_state:ok`: green again once
    // the cluster is whole.
    ready_then_stopped(&bind, &mut worker, "the failover").await?;

    let (code, out) = cmp_worker(&w, &["check"]).await?;
    if code != 0 {
        eprintln!("check after the failover found damage (lost writes):\n{out}");
        let (_, repaired) = cmp_worker(&w, &["check", "--repair"]).await?;
        eprintln!("check --repair:\n{repaired}");
        let (code, out) = cmp_worker(&w, &["check"]).await?;
        assert_eq!(code, 0, "clean after the repair: {out}");
    }
    drop(w);
    drop(cluster);
    Ok(())
}

/// The `polling:init:progress` field `field`, read through any node (`-c` follows MOVED).
async fn progress_field(cluster: &Cluster, w: &World, field: &str) -> anyhow::Result<String> {
    let key = w
        .queue
        .keys()
        .render(&polling_queue::RedisKey::InitProgress);
    Ok(redis_cli(cluster.ports[0], &["-c", "hget", &key, field])
        .await?
        .trim()
        .to_owned())
}

#[tokio::test]
async fn a_master_restarted_empty_is_repaired_by_the_worker_and_check_passes() -> anyhow::Result<()>
{
    let (cluster, w, bind, mut worker) = polling_fleet(
        ["7121", "7122", "7123", "7124", "7125", "7126"],
        "cmp-redis-cluster-restart",
    )
    .await?;
    assert_eq!(progress_field(&cluster, &w, "mode").await?, "initial");

    // The victim holds shard queues but not the progress hash: the progress survives and says
    // completed, the case only the canaries tell (losing the progress too is the single-Redis
    // case, `lifecycle::watchdog`).
    let keys = w.queue.keys();
    let progress_node = master_of(
        cluster.ports[0],
        &keys.render(&polling_queue::RedisKey::InitProgress),
    )
    .await?;
    let mut victim = None;
    for key in keys.all_shard_queues(w.queue.settings().shard_count) {
        let node = master_of(cluster.ports[0], &key).await?;
        if node != progress_node {
            victim = Some(node);
            break;
        }
    }
    let victim = victim.ok_or_else(|| anyhow::anyhow!("every shard queue on the progress node"))?;
    // Its replica must not take over while it restarts: the node is to come back empty, not
    // be replaced by a copy.
    let nodes = redis_cli(cluster.ports[0], &["cluster", "nodes"]).await?;
    let victim_id = nodes
        .lines()
        .find(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|a| a.starts_with(&format!("{HOST}:{victim}@")))
        })
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_default()
        .to_owned();
    for line in nodes.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 3 && f[3] == victim_id {
            let port = f[1]
                .split('@')
                .next()
                .and_then(|a| a.rsplit(':').next())
                .unwrap_or_default();
            redis_cli(
                port,
                &["config", "set", "cluster-replica-no-failover", "yes"],
            )
            .await?;
        }
    }

    let restarted_at = std::time::Instant::now();
    let out = cluster.script(&["restart", &victim]).await?;
    assert!(
        out.status.success(),
        "restart {victim}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole = eventually(Duration::from_secs(30), || async {
        let info = redis_cli(cluster.live(&victim), &["cluster", "info"]).await?;
        Ok(info.contains("cluster_state:ok"))
    })
    .await?;
    assert!(whole, "the cluster is whole again with {victim} back");

    // The worker notices (the watchdog looks every 10 s) and repairs: the progress hash says
    // so, and every card is polled again.
    let repaired = eventually(Duration::from_secs(45), || async {
        Ok(progress_field(&cluster, &w, "mode").await? == "repair"
            && progress_field(&cluster, &w, "status").await? == "completed")
    })
    .await?;
    assert!(
        repaired,
        "a repair run completed after {victim} came back empty"
    );
    let at_repair = usage_queries(&w);
    let again = eventually(Duration::from_secs(60), || async {
        let now = usage_queries(&w);
        Ok(at_repair.iter().all(|(i, n)| now[i] > *n))
    })
    .await?;
    assert!(again, "every card polled again after the repair");
    eprintln!(
        "restart-empty: master {victim} restarted; repaired and every card polled again {:.1} s later",
        restarted_at.elapsed().as_secs_f64()
    );
    ready_then_stopped(&bind, &mut worker, "the repair").await?;

    let (code, out) = cmp_worker(&w, &["check"]).await?;
    assert_eq!(code, 0, "clean with no repair of ours: {out}");
    drop(w);
    drop(cluster);
    Ok(())
}
