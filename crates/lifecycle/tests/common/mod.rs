//! A world for lifecycle and initializer tests: real PostgreSQL and Redis (test-support), the
//! stores, the queue manager, the config manager, a manual clock.
#![allow(dead_code, unreachable_pub)]

use anyhow::Context as _;
use chrono::{DateTime, TimeZone, Utc};
use domain::store::{CardStore, DeviceStore, PollingConfigStore};
use domain::{
    CardCategory, CardId, Intervals, ManualClock, NetworkStatus, NewCard, PollingConfigId,
    PollingConfigInput, RealNameStatus, TaskType,
};
use fred::prelude::*;
use fred::types::Value;
use lifecycle::PollingLifecycleService;
use polling_config::PollingConfigManager;
use polling_queue::{Keys, PollingQueueManager, QueueSettings};
use sea_orm::ConnectionTrait;
use std::collections::BTreeMap;
use std::sync::Arc;
use test_support::TestEnv;

pub const SHARDS: u32 = 16;

pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 2, 8, 0, 0)
        .single()
        .unwrap_or_default()
}

pub fn intervals(realname: u32, carddata: u32, package: u32, protect: Option<u32>) -> Intervals {
    Intervals {
        realname_interval_secs: Some(realname),
        carddata_interval_secs: Some(carddata),
        package_interval_secs: Some(package),
        protect_interval_secs: protect,
    }
}

pub fn config(name: &str, priority: i32, intervals: Intervals) -> PollingConfigInput {
    PollingConfigInput {
        name: name.into(),
        priority,
        enabled: true,
        card_condition: None,
        card_category: None,
        carrier_id: None,
        intervals,
    }
}

pub fn new_card(n: u64, carrier: i64) -> NewCard {
    NewCard {
        iccid: format!("8986{n:014}"),
        msisdn: None,
        carrier_id: domain::CarrierId(carrier),
        card_category: CardCategory::Normal,
        status: 1,
        real_name_status: RealNameStatus::Verified,
        network_status: NetworkStatus::Online,
        enable_polling: true,
        device_id: None,
    }
}

pub struct World {
    pub env: TestEnv,
    pub stores: store::Stores,
    pub pool: Pool,
    pub keys: Keys,
    pub clock: ManualClock,
    pub queue: PollingQueueManager,
    pub configs: PollingConfigManager,
}

impl World {
    pub async fn new() -> anyhow::Result<World> {
        let env = TestEnv::new().await?;
        let stores = store::Stores::new(env.db.conn.clone());
        let pool = env.redis.pool_of(4).await?;
        let keys = Keys::new(env.redis.prefix.clone());
        let clock = ManualClock::new(t0());
        let settings = QueueSettings {
            shard_count: SHARDS,
            ..QueueSettings::default()
        };
        let queue = PollingQueueManager::new(
            pool.clone(),
            keys.clone(),
            settings,
            Arc::new(clock.clone()),
        );
        let configs = PollingConfigManager::new(stores.configs.clone(), pool.clone(), keys.clone());
        Ok(World {
            env,
            stores,
            pool,
            keys,
            clock,
            queue,
            configs,
        })
    }

    pub fn lifecycle(&self) -> PollingLifecycleService {
        PollingLifecycleService::new(
            self.stores.cards.clone(),
            self.stores.devices.clone(),
            self.queue.clone(),
            self.configs.clone(),
            Arc::new(self.clock.clone()),
        )
    }

    pub async fn add_config(&self, input: PollingConfigInput) -> anyhow::Result<PollingConfigId> {
        let id = self.stores.configs.insert(&input).await?.id;
        self.configs.refresh().await?;
        Ok(id)
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

    /// A device with an explicit id (the seed's numbers).
    pub async fn device_with_id(&self, id: i64, enable_polling: bool) -> anyhow::Result<()> {
        self.sql(&format!(
            "INSERT INTO tb_device (id, device_no, enable_polling) VALUES ({id}, 'dev-{id}', {enable_polling})"
        ))
        .await
    }

    /// A card with an explicit id (the seed's numbers), carrier 1, normal, real-named, online.
    pub async fn card_with_id(
        &self,
        id: i64,
        enable_polling: bool,
        device: Option<i64>,
    ) -> anyhow::Result<()> {
        let device = device.map_or("NULL".to_owned(), |d| d.to_string());
        self.sql(&format!(
            "INSERT INTO tb_iot_card (id, iccid, carrier_id, real_name_status, network_status, enable_polling, device_id) \
             VALUES ({id}, 'iccid-{id}', 1, 1, 1, {enable_polling}, {device})"
        ))
        .await
    }

    /// The card in every queue at `t0` (as if it had been polled before).
    pub async fn queue_everywhere(&self, card: CardId) -> anyhow::Result<()> {
        for t in TaskType::ALL {
            self.queue.requeue(card, t, t0()).await?;
        }
        Ok(())
    }

    /// Every (task type -> score) entry of the card over all shards; a card on the wrong shard
    /// or twice would show up here.
    pub async fn entries_of(&self, card: CardId) -> anyhow::Result<Vec<(TaskType, u32, f64)>> {
        let mut out = Vec::new();
        for t in TaskType::ALL {
            for shard in 0..SHARDS {
                let score: Option<f64> = self
                    .pool
                    .zscore(self.keys.shard_queue(shard, t), card.to_string())
                    .await?;
                if let Some(s) = score {
                    out.push((t, shard, s));
                }
            }
        }
        Ok(out)
    }

    /// Every queue's content: (shard, task) -> member -> score.
    pub async fn all_queues(
        &self,
    ) -> anyhow::Result<BTreeMap<(u32, TaskType), BTreeMap<i64, f64>>> {
        let mut out = BTreeMap::new();
        for t in TaskType::ALL {
            for shard in 0..SHARDS {
                let raw: Vec<Value> = self
                    .pool
                    .zrange(
                        self.keys.shard_queue(shard, t),
                        0,
                        -1,
                        None,
                        false,
                        None,
                        true,
                    )
                    .await?;
                let mut members = BTreeMap::new();
                for pair in raw.chunks(2) {
                    let id: i64 = pair[0].as_string().context("member")?.parse()?;
                    let score = pair[1].as_f64().context("score")?;
                    anyhow::ensure!(members.insert(id, score).is_none(), "duplicate member {id}");
                }
                if !members.is_empty() {
                    out.insert((shard, t), members);
                }
            }
        }
        Ok(out)
    }

    pub fn cards(&self) -> Arc<dyn CardStore> {
        self.stores.cards.clone()
    }

    pub fn devices(&self) -> Arc<dyn DeviceStore> {
        self.stores.devices.clone()
    }

    pub fn config_store(&self) -> Arc<dyn PollingConfigStore> {
        self.stores.configs.clone()
    }
}

/// For `tracing_test::logs_assert`: some captured line holds every one of `parts` (a message
/// and the structured fields attached to it, e.g. `card_id=100`).
pub fn line_with<'a>(parts: &'a [&'a str]) -> impl Fn(&[&str]) -> Result<(), String> + 'a {
    move |lines: &[&str]| {
        if lines.iter().any(|l| parts.iter().all(|p| l.contains(p))) {
            Ok(())
        } else {
            Err(format!("no log line with all of {parts:?}"))
        }
    }
}
