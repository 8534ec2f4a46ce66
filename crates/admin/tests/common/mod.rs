//! A world for the admin service tests: real PostgreSQL and Redis (test-support), the stores,
//! the queue manager, every admin service, a manual clock at the real time.
#![allow(dead_code, unreachable_pub)]

use admin::alert_metrics::MetricReader;
use admin::cleanup::CleanupService;
use admin::concurrency::ConcurrencyService;
use admin::evaluator::AlertEvaluator;
use admin::history::HistoryService;
use admin::monitoring::MonitoringService;
use admin::webhook::{WebhookNotifier, WebhookSettings};
use anyhow::Context as _;
use chrono::Utc;
use domain::{CardId, Clock as _, ManualClock, TaskType};
use fred::prelude::*;
use lifecycle::{CardInitializer, InitSettings};
use polling_config::PollingConfigManager;
use polling_queue::{
    ConcurrencySemaphore, Keys, PollingQueueManager, QueueSettings, RecentCounters,
    SemaphoreSettings, SingletonLease, TaskCounters,
};
use sea_orm::ConnectionTrait;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use test_support::TestEnv;

pub const SHARDS: u32 = 16;

pub struct World {
    pub env: TestEnv,
    pub stores: store::Stores,
    pub pool: Pool,
    pub keys: Keys,
    pub clock: ManualClock,
    pub queue: PollingQueueManager,
    pub counters: TaskCounters,
    pub recent: RecentCounters,
    pub initializer: CardInitializer,
    pub leases: SingletonLease,
}

impl World {
    pub async fn new() -> anyhow::Result<World> {
        let env = TestEnv::new().await?;
        let stores = store::Stores::new(env.db.conn.clone());
        let pool = env.redis.pool_of(4).await?;
        let keys = Keys::new(env.redis.prefix.clone());
        let clock = ManualClock::new(Utc::now());
        let arc_clock: Arc<dyn domain::Clock> = Arc::new(clock.clone());
        let queue = PollingQueueManager::new(
            pool.clone(),
            keys.clone(),
            QueueSettings {
                shard_count: SHARDS,
                ..QueueSettings::default()
            },
            arc_clock.clone(),
        );
        let configs = PollingConfigManager::new(stores.configs.clone(), pool.clone(), keys.clone());
        let initializer = CardInitializer::new(
            stores.cards.clone(),
            configs,
            pool.clone(),
            keys.clone(),
            arc_clock.clone(),
            InitSettings {
                shard_count: SHARDS,
                ..InitSettings::default()
            },
        );
        Ok(World {
            counters: TaskCounters::new(pool.clone(), keys.clone(), arc_clock),
            recent: RecentCounters::new(pool.clone(), keys.clone()),
            leases: SingletonLease::new(pool.clone(), keys.clone()),
            env,
            stores,
            pool,
            keys,
            clock,
            queue,
            initializer,
        })
    }

    pub fn clock(&self) -> Arc<dyn domain::Clock> {
        Arc::new(self.clock.clone())
    }

    pub fn monitoring(&self) -> MonitoringService {
        MonitoringService::new(self.metric_reader(), self.counters.clone())
    }

    pub fn metric_reader(&self) -> MetricReader {
        MetricReader::new(
            self.stores.monitoring.clone(),
            self.queue.clone(),
            self.recent.clone(),
            self.initializer.clone(),
            self.recent.budget_board(),
            self.clock(),
        )
    }

    pub fn evaluator(&self, settings: WebhookSettings) -> anyhow::Result<AlertEvaluator> {
        let notifier = WebhookNotifier::new(self.stores.alerts.clone(), settings)?;
        Ok(AlertEvaluator::new(
            self.stores.alerts.clone(),
            self.metric_reader(),
            notifier,
            self.clock(),
        ))
    }

    pub fn cleanup(&self) -> CleanupService {
        CleanupService::new(
            self.stores.cleanup.clone(),
            self.leases.clone(),
            self.clock(),
        )
    }

    pub fn history(&self) -> HistoryService {
        HistoryService::new(
            self.stores.metrics_history.clone(),
            self.stores.monitoring.clone(),
            self.queue.clone(),
            self.recent.clone(),
            self.clock(),
        )
    }

    pub fn concurrency(&self, default_max: [u32; 4]) -> ConcurrencyService {
        let semaphore = ConcurrencySemaphore::new(
            self.pool.clone(),
            self.keys.clone(),
            SemaphoreSettings {
                default_max,
                lease: Duration::from_secs(300),
            },
            self.clock(),
        );
        ConcurrencyService::new(semaphore, default_max)
    }

    pub async fn sql(&self, sql: &str) -> anyhow::Result<()> {
        self.env
            .db
            .conn
            .execute_unprepared(sql)
            .await
            .with_context(|| sql.to_owned())?;
        Ok(())
    }

    pub async fn count(&self, sql: &str) -> anyhow::Result<i64> {
        let row = self
            .env
            .db
            .conn
            .query_one_raw(sea_orm::Statement::from_string(
                sea_orm::DbBackend::Postgres,
                sql.to_owned(),
            ))
            .await?
            .context("no row")?;
        Ok(row.try_get_by_index::<i64>(0)?)
    }

    /// `n` members in the queue of `task` on `shard`, all due in `secs_from_now` seconds (the
    /// members only need to be distinct; ZCARD does not care which shard a card belongs to).
    pub async fn fill_shard(
        &self,
        shard: u32,
        task: TaskType,
        n: u64,
        secs_from_now: i64,
    ) -> anyhow::Result<()> {
        let key = self.keys.shard_queue(shard, task);
        let score = (self.clock.now().timestamp() + secs_from_now) as f64;
        // Far above the ids `due_cards` uses, so the two never collide.
        let mut next = u64::from(shard) + 16 * 10_000_000;
        let mut left = n;
        while left > 0 {
            let chunk = left.min(10_000);
            let members: Vec<(f64, String)> = (0..chunk)
                .map(|i| (score, (next + i * u64::from(SHARDS)).to_string()))
                .collect();
            next += chunk * u64::from(SHARDS);
            let _: i64 = self
                .pool
                .zadd(key.as_str(), None, None, false, false, members)
                .await?;
            left -= chunk;
        }
        Ok(())
    }

    /// Queues `n` carddata cards, due since `secs_ago`.
    pub async fn due_cards(&self, task: TaskType, n: i64, secs_ago: i64) -> anyhow::Result<()> {
        let at = self.clock.now() - chrono::Duration::seconds(secs_ago);
        let entries: Vec<(CardId, _)> = (1..=n).map(|i| (CardId(i), at)).collect();
        self.queue.requeue_many(task, &entries).await?;
        Ok(())
    }
}

/// Polls `check` every 20 ms until it answers true or `timeout` passes.
pub async fn wait_for<F, Fut>(timeout: Duration, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await? {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!("condition not met within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
