//! Where the CPU goes during a window: this process split by thread name (the worker, and the
//! in-process gateway-sim on threads of its own runtime), the PostgreSQL processes by pid and
//! the Redis server by its own `INFO cpu`.

use anyhow::Context;
use fred::prelude::*;
use fred::types::InfoKind;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};

/// The thread name (its `comm`, at most 15 bytes) of the gateway-sim runtime's threads.
pub(crate) const SIM_THREAD: &str = "gateway-sim";

/// Clock ticks a second of `/proc/*/stat` (`USER_HZ`, 100 on Linux).
const TICKS: f64 = 100.0;

/// CPU seconds so far of each party.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuSnapshot {
    pub(crate) worker: f64,
    pub(crate) sim: f64,
    pub(crate) postgres: f64,
    pub(crate) redis: f64,
    /// `(busy, total)` jiffies of the whole machine.
    machine: (f64, f64),
}

/// Cores used by each party between two snapshots `secs` apart.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub(crate) struct CpuSplit {
    pub(crate) worker: f64,
    pub(crate) sim: f64,
    pub(crate) postgres: f64,
    pub(crate) redis: f64,
    /// The whole machine (everyone's work, other users' too), in cores.
    pub(crate) machine: f64,
}

impl CpuSplit {
    pub(crate) fn ours(&self) -> f64 {
        self.worker + self.sim + self.postgres + self.redis
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "worker {:.2}, PostgreSQL {:.2}, Redis {:.2}, gateway-sim {:.2} cores (ours {:.2}; whole machine {:.2} of {})",
            self.worker,
            self.postgres,
            self.redis,
            self.sim,
            self.ours(),
            self.machine,
            crate::carddata::num_cpus()
        )
    }
}

impl CpuSnapshot {
    /// Reads every party now; `pg_pids` are the PostgreSQL processes to count.
    pub(crate) async fn take(redis: &Pool, pg_pids: &[i32]) -> anyhow::Result<CpuSnapshot> {
        let (worker, sim) = threads();
        let postgres = pg_pids.iter().map(|pid| process_secs(*pid)).sum();
        Ok(CpuSnapshot {
            worker,
            sim,
            postgres,
            redis: redis_secs(redis).await?,
            machine: crate::carddata::machine_busy(),
        })
    }

    pub(crate) fn since(&self, before: &CpuSnapshot, secs: f64) -> CpuSplit {
        let secs = secs.max(f64::MIN_POSITIVE);
        let (busy, total) = (
            self.machine.0 - before.machine.0,
            self.machine.1 - before.machine.1,
        );
        CpuSplit {
            worker: (self.worker - before.worker) / secs,
            sim: (self.sim - before.sim) / secs,
            postgres: (self.postgres - before.postgres) / secs,
            redis: (self.redis - before.redis) / secs,
            machine: busy / total.max(1.0) * crate::carddata::num_cpus() as f64,
        }
    }
}

/// `(user + system)` seconds of one `/proc/.../stat` file's text.
fn stat_secs(stat: &str) -> f64 {
    // After the command name (which may hold spaces) comes field 3, the state; utime and stime
    // are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / TICKS
}

fn process_secs(pid: i32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| stat_secs(&s))
        .unwrap_or(0.0)
}

/// `(the rest of this process, the gateway-sim threads)` in CPU seconds.
fn threads() -> (f64, f64) {
    let (mut rest, mut sim) = (0.0, 0.0);
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return (0.0, 0.0);
    };
    for task in dir.flatten() {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let secs = std::fs::read_to_string(path.join("stat"))
            .map(|s| stat_secs(&s))
            .unwrap_or(0.0);
        if comm.trim_end().starts_with(SIM_THREAD) {
            sim += secs;
        } else {
            rest += secs;
        }
    }
    // Threads that ended before now are not listed: the process total covers them.
    let total = process_secs(std::process::id() as i32);
    (total.max(rest + sim) - sim, sim)
}

/// `used_cpu_user + used_cpu_sys` of the Redis server (all its clients: it is shared).
async fn redis_secs(redis: &Pool) -> anyhow::Result<f64> {
    let info: String = redis
        .next()
        .info(Some(InfoKind::Cpu))
        .await
        .context("INFO cpu")?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Ok(field("used_cpu_user") + field("used_cpu_sys"))
}

/// The PostgreSQL processes that work for `db`'s database: its backends, and the server's
/// background processes (WAL writer, checkpointer, ...; shared with other databases).
pub(crate) async fn postgres_pids(db: &DatabaseConnection) -> anyhow::Result<Vec<i32>> {
    let rows = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT pid FROM pg_stat_activity \
             WHERE datname = current_database() OR backend_type NOT IN ('client backend', 'autovacuum worker')",
        ))
        .await
        .context("pg_stat_activity")?;
    rows.iter()
        .map(|r| r.try_get_by_index::<i32>(0).context("pid"))
        .collect()
}
