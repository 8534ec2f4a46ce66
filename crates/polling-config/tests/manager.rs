//! PollingConfigManager against a real PostgreSQL and Redis (test-support).

use anyhow::Context as _;
use domain::store::{MockPollingConfigStore, PollingConfigStore};
use domain::{
    CardCategory, CardCondition, CardId, CardMatchFields, CarrierId, Intervals, NetworkStatus,
    PollingConfigId, PollingConfigInput, RealNameStatus, StoreError, TaskType,
};
use fred::prelude::*;
use polling_config::PollingConfigManager;
use polling_queue::{Keys, RedisKey};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::TestEnv;
use tokio_util::sync::CancellationToken;

fn input(name: &str, priority: i32) -> PollingConfigInput {
    PollingConfigInput {
        name: name.into(),
        priority,
        enabled: true,
        card_condition: None,
        card_category: None,
        carrier_id: None,
        intervals: Intervals {
            realname_interval_secs: Some(600),
            carddata_interval_secs: Some(300),
            package_interval_secs: Some(3600),
            protect_interval_secs: Some(60),
        },
    }
}

fn card(carrier: i64, category: CardCategory, realname: bool, online: bool) -> CardMatchFields {
    CardMatchFields {
        id: CardId(1),
        carrier_id: CarrierId(carrier),
        card_category: category,
        real_name_status: if realname {
            RealNameStatus::Verified
        } else {
            RealNameStatus::NotVerified
        },
        network_status: if online {
            NetworkStatus::Online
        } else {
            NetworkStatus::Stopped
        },
    }
}

struct World {
    env: TestEnv,
    store: Arc<dyn PollingConfigStore>,
}

impl World {
    async fn new() -> anyhow::Result<World> {
        let env = TestEnv::new().await?;
        let store = store::Stores::new(env.db.conn.clone()).configs;
        Ok(World { env, store })
    }

    async fn manager(&self) -> anyhow::Result<PollingConfigManager> {
        let pool = self.env.redis.pool().await?;
        Ok(PollingConfigManager::new(
            self.store.clone(),
            pool,
            Keys::new(self.env.redis.prefix.clone()),
        ))
    }

    async fn add(&self, i: PollingConfigInput) -> anyhow::Result<PollingConfigId> {
        Ok(self.store.insert(&i).await.context("insert config")?.id)
    }
}

#[tokio::test]
async fn priority_ascending_then_id_and_disabled_ignored() -> anyhow::Result<()> {
    let w = World::new().await?;
    let low_prio = w.add(input("late", 10)).await?;
    let first_tie = w.add(input("tie-a", 5)).await?;
    let second_tie = w.add(input("tie-b", 5)).await?;
    let disabled = w
        .add(PollingConfigInput {
            enabled: false,
            ..input("off", 0)
        })
        .await?;
    assert!(first_tie < second_tie && low_prio < first_tie && disabled > second_tie);
    let m = w.manager().await?;
    assert_eq!(m.start().await?, 3, "three enabled configs");
    let any = card(1, CardCategory::Normal, false, true);
    assert_eq!(m.match_config(&any).map(|c| c.id()), Some(first_tie));

    w.store.set_enabled(first_tie, false).await?;
    m.refresh().await?;
    assert_eq!(m.match_config(&any).map(|c| c.id()), Some(second_tie));
    w.store.set_enabled(second_tie, false).await?;
    m.refresh().await?;
    assert_eq!(m.match_config(&any).map(|c| c.id()), Some(low_prio));
    // The order in memory is the matching order.
    let order: Vec<i32> = m
        .snapshot()
        .configs()
        .iter()
        .map(|c| c.spec.priority)
        .collect();
    assert_eq!(order, vec![10]);
    Ok(())
}

#[tokio::test]
async fn each_condition_kind() -> anyhow::Result<()> {
    let w = World::new().await?;
    let by_carrier = w
        .add(PollingConfigInput {
            carrier_id: Some(CarrierId(7)),
            ..input("carrier 7", 1)
        })
        .await?;
    let industry = w
        .add(PollingConfigInput {
            card_category: Some(CardCategory::Industry),
            ..input("industry", 2)
        })
        .await?;
    let not_realname = w
        .add(PollingConfigInput {
            card_condition: Some(CardCondition::NotRealname),
            ..input("kyc", 3)
        })
        .await?;
    let realname = w
        .add(PollingConfigInput {
            card_condition: Some(CardCondition::Realname),
            carrier_id: Some(CarrierId(9)),
            ..input("real 9", 4)
        })
        .await?;
    let stopped = w
        .add(PollingConfigInput {
            card_condition: Some(CardCondition::Stopped),
            ..input("stopped", 5)
        })
        .await?;
    let online = w
        .add(PollingConfigInput {
            card_condition: Some(CardCondition::Online),
            carrier_id: Some(CarrierId(8)),
            ..input("online 8", 6)
        })
        .await?;
    let m = w.manager().await?;
    m.start().await?;
    let cases = [
        (
            card(7, CardCategory::Industry, false, false),
            Some(by_carrier),
        ),
        (card(8, CardCategory::Industry, false, true), Some(industry)),
        (
            card(8, CardCategory::Normal, false, true),
            Some(not_realname),
        ),
        (card(9, CardCategory::Normal, true, true), Some(realname)),
        (card(8, CardCategory::Normal, true, false), Some(stopped)),
        (card(8, CardCategory::Normal, true, true), Some(online)),
        (card(10, CardCategory::Normal, true, true), None),
    ];
    for (c, want) in cases {
        assert_eq!(m.match_config(&c).map(|x| x.id()), want, "{c:?}");
    }
    Ok(())
}

#[tokio::test]
async fn null_interval_means_not_scheduled() -> anyhow::Result<()> {
    let w = World::new().await?;
    let only_carddata = Intervals {
        carddata_interval_secs: Some(1800),
        ..Intervals::default()
    };
    let id = w
        .add(PollingConfigInput {
            intervals: only_carddata,
            ..input("carddata only", 1)
        })
        .await?;
    let m = w.manager().await?;
    m.start().await?;
    let c = card(1, CardCategory::Normal, true, true);
    let matched = m.match_config(&c).context("matches")?;
    assert_eq!(matched.id(), id);
    assert_eq!(matched.task_types(), vec![TaskType::Carddata]);
    assert_eq!(
        matched.interval(TaskType::Carddata),
        Some(Duration::from_secs(1800))
    );
    for t in [TaskType::Realname, TaskType::Package, TaskType::Protect] {
        assert_eq!(matched.interval(t), None);
        assert_eq!(m.matched_interval(&c, t), None);
    }
    assert_eq!(
        m.matched_interval(&c, TaskType::Carddata),
        Some(Duration::from_secs(1800))
    );
    Ok(())
}

#[tokio::test]
async fn redis_hash_holds_every_config_with_a_24h_ttl() -> anyhow::Result<()> {
    let w = World::new().await?;
    let on = w.add(input("on", 1)).await?;
    let off = w
        .add(PollingConfigInput {
            enabled: false,
            ..input("off", 2)
        })
        .await?;
    let m = w.manager().await?;
    m.refresh().await?;
    let pool = w.env.redis.pool().await?;
    let key = Keys::new(w.env.redis.prefix.clone()).render(&RedisKey::Configs);
    let ttl: i64 = pool.ttl(&key).await?;
    assert!((86_300..=86_400).contains(&ttl), "ttl {ttl}");
    let raw: std::collections::HashMap<String, String> = pool.hgetall(&key).await?;
    assert_eq!(raw.len(), 2);
    let back: domain::PollingConfig = serde_json::from_str(&raw[&off.to_string()])?;
    assert!(!back.spec.enabled);
    assert!(raw.contains_key(&on.to_string()));
    // A deleted config leaves the hash at the next refresh.
    w.store.delete(off).await?;
    m.refresh().await?;
    let n: i64 = pool.hlen(&key).await?;
    assert_eq!(n, 1);
    Ok(())
}

#[tokio::test]
async fn a_published_change_reaches_another_manager_within_a_second() -> anyhow::Result<()> {
    let w = World::new().await?;
    let old = w.add(input("old", 5)).await?;
    let (api, worker) = (w.manager().await?, w.manager().await?);
    api.start().await?;
    worker.start().await?;
    let shutdown = CancellationToken::new();
    // Five minutes: only the message can explain a change within the second.
    let refresher = worker.spawn_refresher(shutdown.clone()).await?;
    let c = card(1, CardCategory::Normal, true, true);
    assert_eq!(worker.match_config(&c).map(|m| m.id()), Some(old));

    let new = w.add(input("new", 1)).await?;
    let sent = Instant::now();
    api.publish_changed().await?;
    while worker.match_config(&c).map(|m| m.id()) != Some(new) {
        assert!(
            sent.elapsed() < Duration::from_secs(1),
            "change not visible after 1 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!("change visible after {:?}", sent.elapsed());
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), refresher).await??;
    Ok(())
}

#[tokio::test]
async fn the_timer_refreshes_without_a_message() -> anyhow::Result<()> {
    let w = World::new().await?;
    let m = w.manager().await?;
    m.start().await?;
    let shutdown = CancellationToken::new();
    let refresher = m
        .spawn_refresher_every(Duration::from_millis(100), shutdown.clone())
        .await?;
    let id = w.add(input("later", 1)).await?;
    let c = card(1, CardCategory::Normal, true, true);
    let start = Instant::now();
    while m.match_config(&c).map(|x| x.id()) != Some(id) {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "timer refresh did not happen"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), refresher).await??;
    Ok(())
}

#[tokio::test]
async fn database_down_keeps_the_last_good_configs_and_starts_from_redis() -> anyhow::Result<()> {
    let w = World::new().await?;
    let id = w.add(input("only", 1)).await?;
    let healthy = w.manager().await?;
    healthy.refresh().await?; // writes the Redis hash

    let mut down = MockPollingConfigStore::new();
    down.expect_list_all()
        .returning(|| Err(StoreError::Database("connection refused".into())));
    let pool = w.env.redis.pool().await?;
    let m = PollingConfigManager::new(Arc::new(down), pool, Keys::new(w.env.redis.prefix.clone()));
    assert_eq!(m.start().await?, 1, "loaded from the redis hash");
    let c = card(1, CardCategory::Normal, true, true);
    assert_eq!(m.match_config(&c).map(|x| x.id()), Some(id));
    assert!(m.refresh().await.is_err());
    assert_eq!(
        m.match_config(&c).map(|x| x.id()),
        Some(id),
        "last good configs kept"
    );
    Ok(())
}
