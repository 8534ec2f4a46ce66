//! Diagnostics of the carddata run that add nothing to the poll itself: where a check's time
//! goes (handler latency, gateway latency) and what PostgreSQL's backends wait on.

use async_trait::async_trait;
use domain::{
    CardId, CarrierId, CarrierPackage, MonthUsage, NetworkStatus, RealNameStatus, TaskType,
};
use gateway::{CarrierGateway, GatewayError};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use task_handlers::{Outcome, TaskHandler};
use tokio_util::sync::CancellationToken;

/// Count, total latency (µs) and in-flight high-water mark of some call.
#[derive(Default)]
pub(crate) struct Timing {
    count: AtomicU64,
    micros: AtomicU64,
    running: AtomicU64,
    max_running: AtomicU64,
}

impl Timing {
    async fn time<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        let now = self.running.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_running.fetch_max(now, Ordering::Relaxed);
        let started = Instant::now();
        let out = f.await;
        self.micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.running.fetch_sub(1, Ordering::Relaxed);
        out
    }

    /// `(count, total µs)`.
    pub(crate) fn snapshot(&self) -> (u64, u64) {
        (
            self.count.load(Ordering::Relaxed),
            self.micros.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn max_running(&self) -> u64 {
        self.max_running.load(Ordering::Relaxed)
    }
}

/// Mean milliseconds between two snapshots.
pub(crate) fn mean_ms(before: (u64, u64), after: (u64, u64)) -> f64 {
    let n = after.0.saturating_sub(before.0).max(1);
    after.1.saturating_sub(before.1) as f64 / n as f64 / 1000.0
}

/// The real handler, counted by outcome and timed.
pub(crate) struct Counting {
    pub(crate) inner: Arc<dyn TaskHandler>,
    pub(crate) counts: [AtomicU64; 4],
    pub(crate) timing: Timing,
}

#[async_trait]
impl TaskHandler for Counting {
    fn task_type(&self) -> TaskType {
        self.inner.task_type()
    }

    async fn handle(&self, card: CardId) -> Outcome {
        let outcome = self.timing.time(self.inner.handle(card)).await;
        let i = match outcome {
            Outcome::Success => 0,
            Outcome::Failure => 1,
            Outcome::RequeuedFull => 2,
            Outcome::Skipped => 3,
        };
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        outcome
    }
}

impl Counting {
    pub(crate) fn new(inner: Arc<dyn TaskHandler>) -> Counting {
        Counting {
            inner,
            counts: Default::default(),
            timing: Timing::default(),
        }
    }

    pub(crate) fn snapshot(&self) -> [u64; 4] {
        [0, 1, 2, 3].map(|i| self.counts[i].load(Ordering::Relaxed))
    }
}

/// The real gateway client, timed.
pub(crate) struct TimedGateway {
    pub(crate) inner: Arc<dyn CarrierGateway>,
    pub(crate) timing: Timing,
}

#[async_trait]
impl CarrierGateway for TimedGateway {
    async fn realname(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<RealNameStatus, GatewayError> {
        self.timing.time(self.inner.realname(carrier, iccid)).await
    }
    async fn usage(&self, carrier: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        self.timing.time(self.inner.usage(carrier, iccid)).await
    }
    async fn packages(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        self.timing.time(self.inner.packages(carrier, iccid)).await
    }
    async fn stop(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.timing.time(self.inner.stop(carrier, iccid)).await
    }
    async fn start(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.timing.time(self.inner.start(carrier, iccid)).await
    }
}

/// Samples `pg_stat_activity` of the bench database every 200 ms until cancelled: how many
/// backend samples fell in each state / wait event, as shares.
pub(crate) async fn sample_waits(db: DatabaseConnection, stop: CancellationToken) -> String {
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let sql = "SELECT coalesce(wait_event_type || ':' || wait_event, 'on cpu') || ' (' || state || ')' \
               FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
    while !stop.is_cancelled() {
        let rows = db
            .query_all_raw(Statement::from_string(db.get_database_backend(), sql))
            .await;
        for row in rows.iter().flatten() {
            if let Ok(k) = row.try_get_by_index::<String>(0) {
                *seen.entry(k).or_default() += 1;
            }
        }
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
    let total: u64 = seen.values().sum::<u64>().max(1);
    let mut v: Vec<(String, u64)> = seen.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v.iter()
        .take(6)
        .map(|(k, n)| format!("{k} {:.0}%", *n as f64 * 100.0 / total as f64))
        .collect::<Vec<_>>()
        .join(", ")
}
