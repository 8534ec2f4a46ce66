//! PollingBase and the shared poll flow: cache, concurrency pools, rescheduling, the registry.

mod common;

use common::{CARDDATA_SECS, CardSpec, World, assert_score};
use domain::store::{CardFacts, MockCardStore};
use domain::{CardId, PackageOwner, TaskType};
use fred::prelude::*;
use gateway_sim::FaultsPatch;
use polling_queue::RedisKey;
use rust_decimal_macros::dec;
use std::sync::Arc;
use task_handlers::{HandlerDeps, Outcome, PollingBase};
use tracing_test::traced_test;

fn base_with(w: &World, cards: MockCardStore) -> PollingBase {
    HandlerDeps {
        cards: Arc::new(cards),
        ..w.deps.clone()
    }
    .base()
}

async fn ttl(w: &World, card: CardId) -> i64 {
    let key = w.keys.render(&RedisKey::Card { card });
    w.pool.ttl(key).await.expect("ttl")
}

/// Seed: cardID=100 cached in Redis -> read from Redis, not the store; the TTL restarts.
#[tokio::test]
async fn cache_hit_reads_redis_only_and_slides_the_ttl() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(100)).await;
    let snapshot = w.db_card(card).await.identity(None);
    w.cache.set(&snapshot).await.expect("cached");
    let key = w.keys.render(&RedisKey::Card { card });
    let _: bool = w.pool.expire(key, 10, None).await.expect("expire");
    let mut store = MockCardStore::new();
    store.expect_get().never();
    store.expect_get_many().never();

    let got = base_with(&w, store)
        .get_card_with_cache(card)
        .await
        .expect("reads");

    assert_eq!(got, Some(snapshot));
    assert!(ttl(&w, card).await > 290, "sliding TTL restarted at 300 s");
}

/// Seed: cardID=200 not cached -> one store read, then cached for 300 s. (The read is the
/// batched one: concurrent polls' misses share it.)
#[tokio::test]
async fn cache_miss_reads_the_store_and_fills_the_cache() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(200)).await;
    let row = w.db_card(card).await;
    let snapshot = row.identity(None);
    let mut store = MockCardStore::new();
    let from_db = row.clone();
    store.expect_get().never();
    store.expect_get_many().never();
    store
        .expect_facts_of()
        .times(1)
        .withf(move |ids, packages| ids == [card] && !packages)
        .returning(move |_, _| {
            Ok(vec![CardFacts {
                card: from_db.clone(),
                device_polling: None,
                packages: Vec::new(),
            }])
        });

    let got = base_with(&w, store)
        .get_card_with_cache(card)
        .await
        .expect("reads");

    assert_eq!(got, Some(snapshot.clone()));
    assert_eq!(w.cache.get(card).await.expect("cache"), Some(snapshot));
    assert!(ttl(&w, card).await > 290);
}

/// Seed: carddata max 50, 60 polls at once -> 50 run, 10 are rescheduled for now with a debug
/// log and `RequeuedFull`; no card leaves the queue.
#[tokio::test]
#[traced_test]
async fn sixty_carddata_polls_with_max_50() {
    let w = World::new().await;
    w.semaphore
        .set_max(TaskType::Carddata, 50)
        .await
        .expect("max set");
    // A slow carrier keeps the 50 slots held while the other 10 try.
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(300),
            ..FaultsPatch::default()
        })
        .expect("faults");
    let mut cards = Vec::new();
    for id in 1000..1060 {
        let card = w
            .card(CardSpec {
                month_total_mb: dec!(10),
                ..CardSpec::new(id)
            })
            .await;
        w.add_package(w.package(PackageOwner::Card(card), None, dec!(0)))
            .await;
        cards.push(card);
    }

    let outcomes =
        futures::future::join_all(cards.iter().map(|c| w.handle(TaskType::Carddata, *c))).await;

    let ran = outcomes.iter().filter(|o| **o == Outcome::Success).count();
    let full: Vec<CardId> = cards
        .iter()
        .zip(&outcomes)
        .filter(|(_, o)| **o == Outcome::RequeuedFull)
        .map(|(c, _)| *c)
        .collect();
    assert_eq!((ran, full.len()), (50, 10));
    for card in &cards {
        let expected = if full.contains(card) {
            w.at(0)
        } else {
            w.at(CARDDATA_SECS)
        };
        assert_score(
            w.score(*card, TaskType::Carddata).await,
            expected,
            "rescheduled, none lost",
        );
    }
    for card in &full {
        let c = w.db_card(*card).await;
        assert_eq!(
            c.usage.current_month_start_date, None,
            "a requeued card was not polled"
        );
    }
    logs_assert(|lines: &[&str]| {
        let n = lines
            .iter()
            .filter(|l| {
                l.contains("DEBUG")
                    && l.contains("并发数已满，已重新入队")
                    && l.contains("card_id=")
            })
            .count();
        if n == 10 {
            Ok(())
        } else {
            Err(format!("{n} requeue logs, expected 10"))
        }
    });
    let stats = w.counters.read(TaskType::Carddata).await.expect("stats");
    assert_eq!(
        (stats.success, stats.requeued_full, stats.failure),
        (50, 10, 0)
    );
    assert_eq!(
        w.semaphore
            .current(TaskType::Carddata)
            .await
            .expect("current"),
        0,
        "every slot given back"
    );
}

/// Seed: the pools are isolated per task type: a full realname pool does not take carddata's.
#[tokio::test]
async fn pools_are_isolated_per_task_type() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(100)).await;
    w.add_package(w.package(PackageOwner::Card(card), None, dec!(0)))
        .await;
    w.semaphore
        .set_max(TaskType::Realname, 1)
        .await
        .expect("max set");
    let held = w
        .semaphore
        .acquire(TaskType::Realname)
        .await
        .expect("acquire")
        .expect("a slot");

    assert_eq!(
        w.handle(TaskType::Realname, card).await,
        Outcome::RequeuedFull
    );
    assert_score(
        w.score(card, TaskType::Realname).await,
        w.at(0),
        "requeued for now",
    );
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);

    w.semaphore.release(held).await.expect("release");
    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);
}

/// A card that no longer exists is skipped and taken out of every queue.
#[tokio::test]
async fn missing_card_is_skipped_and_unqueued() {
    let w = World::new().await;
    let gone = CardId(4242);
    for task in TaskType::ALL {
        w.queue.requeue(gone, task, w.now()).await.expect("queued");
    }
    assert_eq!(w.handle(TaskType::Package, gone).await, Outcome::Skipped);
    for task in TaskType::ALL {
        assert_eq!(w.score(gone, task).await, None, "{task}: not queued");
    }
}

/// A card whose matched config no longer schedules the type (here: no config matches any
/// more, the reconciliation has not reached it yet) leaves its queues with that poll, instead
/// of being parked forever (invariant 8).
#[tokio::test]
async fn unscheduled_card_leaves_its_queues() {
    let w = World::new().await;
    let card = w
        .card(CardSpec {
            month_total_mb: dec!(10),
            ..CardSpec::new(100)
        })
        .await;
    let config = w.stores.configs.list_all().await.expect("configs")[0].id;
    w.stores
        .configs
        .set_enabled(config, false)
        .await
        .expect("disabled");
    w.configs.refresh().await.expect("refresh");

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);

    for task in TaskType::ALL {
        assert_eq!(w.score(card, task).await, None, "{task} entry removed");
    }
}

/// A card removed by the lifecycle while it was being polled is not brought back (ZADD XX).
#[tokio::test]
async fn removed_meanwhile_stays_removed() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(100)).await;
    w.queue.remove_from_all_queues(card).await.expect("removed");
    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);
    assert_eq!(w.score(card, TaskType::Realname).await, None);
}

/// `build_registry` builds one handler per task type, each answering its own type.
#[tokio::test]
async fn registry_holds_the_four_handlers() {
    let w = World::new().await;
    let types: Vec<TaskType> = w.registry.task_types().collect();
    assert_eq!(types, TaskType::ALL.to_vec());
    for t in TaskType::ALL {
        assert_eq!(w.registry.get(t).map(|h| h.task_type()), Some(t));
    }
}
