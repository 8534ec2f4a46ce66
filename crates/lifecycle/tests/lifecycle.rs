//! PollingLifecycleService: the polling-switch check before enqueueing, the API-process
//! scenarios and `docs/rules.md`, "Lifecycle", on real PostgreSQL and Redis.
//!
//! Card and device ids are the scenarios' own (10, 100, 200, 1000): those rows are inserted with
//! explicit ids by SQL.

mod common;

use common::*;
use domain::store::{MockCardStore, MockDeviceStore};
use domain::{CardCondition, CardId, DeviceId, TaskType};
use lifecycle::{Outcome, PollingLifecycleService};
use polling_queue::{CardCache, to_score};
use std::sync::Arc;
use std::time::Instant;
use tracing_test::traced_test;

#[tokio::test]
#[traced_test]
async fn seed_m3_device_disabled_status_change_removes_and_does_not_requeue() -> anyhow::Result<()>
{
    let w = World::new().await?;
    w.add_config(config("all", 1, intervals(600, 300, 3600, Some(60))))
        .await?;
    // GIVEN deviceID=10 has enable_polling=false; card-A (cardID=100) is bound to it.
    w.device_with_id(10, false).await?;
    w.card_with_id(100, true, Some(10)).await?;
    w.queue_everywhere(CardId(100)).await?;
    assert_eq!(w.entries_of(CardId(100)).await?.len(), 4);

    // WHEN OnCardStatusChanged(100)
    let out = w.lifecycle().on_card_status_changed(CardId(100)).await?;

    // THEN removed from every queue, not requeued, debug log names both ids.
    assert_eq!(w.entries_of(CardId(100)).await?, vec![]);
    assert_eq!(
        out,
        Outcome {
            removed: 1,
            skipped: 1,
            ..Outcome::default()
        }
    );
    logs_assert(common::line_with(&[
        "设备轮询已禁用，跳过重新入队",
        "device_id=10",
        "card_id=100",
    ]));
    Ok(())
}

#[tokio::test]
#[traced_test]
async fn seed_m3_card_disabled_on_card_enabled_skips() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.add_config(config("all", 1, intervals(600, 300, 3600, Some(60))))
        .await?;
    // GIVEN cardID=200 has enable_polling=false and no device.
    w.card_with_id(200, false, None).await?;
    w.queue_everywhere(CardId(200)).await?;

    let out = w.lifecycle().on_card_enabled(CardId(200)).await?;

    assert_eq!(w.entries_of(CardId(200)).await?, vec![]);
    assert_eq!(out.skipped, 1);
    logs_assert(common::line_with(&[
        "卡轮询已禁用，跳过入队",
        "card_id=200",
    ]));
    Ok(())
}

/// Stores that fail the test on any call: disabled and deleted must not read a flag.
fn no_store_reads(w: &World) -> PollingLifecycleService {
    PollingLifecycleService::new(
        Arc::new(MockCardStore::new()),
        Arc::new(MockDeviceStore::new()),
        w.queue.clone(),
        w.configs.clone(),
        Arc::new(w.clock.clone()),
    )
}

#[tokio::test]
async fn seed_m3_deleted_and_disabled_clear_without_checking_flags() -> anyhow::Result<()> {
    let w = World::new().await?;
    let svc = no_store_reads(&w);
    for id in [300, 301] {
        w.queue_everywhere(CardId(id)).await?;
    }
    svc.on_card_disabled(CardId(300)).await?;
    svc.on_card_deleted(CardId(301)).await?;
    assert_eq!(w.entries_of(CardId(300)).await?, vec![]);
    assert_eq!(w.entries_of(CardId(301)).await?, vec![]);
    Ok(())
}

#[tokio::test]
async fn api_process_deletes_without_a_scheduler_and_twice_is_harmless() -> anyhow::Result<()> {
    // The API process: stores, Redis, the config cache and this service; no scheduler exists in
    // this test (nor in this crate's dependencies).
    let w = World::new().await?;
    w.add_config(config("all", 1, intervals(600, 300, 3600, Some(60))))
        .await?;
    w.card_with_id(1000, true, None).await?;
    let api = w.lifecycle();
    api.on_card_created(CardId(1000)).await?;
    // Worker/API re-queue: cardID=1000 routes to shard 8 (1000 % 16), score now.
    let entries = w.entries_of(CardId(1000)).await?;
    assert_eq!(entries.len(), 4);
    assert!(
        entries
            .iter()
            .all(|(_, shard, score)| *shard == 8 && *score == to_score(t0()))
    );

    let cache = CardCache::new(w.pool.clone(), w.keys.clone());
    let card = w
        .stores
        .cards
        .get(CardId(1000))
        .await?
        .ok_or_else(|| anyhow::anyhow!("card"))?;
    cache.set(&card.identity(None)).await?;
    // Both processes react to the same deletion at once: idempotent, no error.
    let worker = w.lifecycle();
    let (a, b) = tokio::join!(
        api.on_card_deleted(CardId(1000)),
        worker.on_card_deleted(CardId(1000))
    );
    a?;
    b?;
    assert_eq!(w.entries_of(CardId(1000)).await?, vec![]);
    assert_eq!(cache.get(CardId(1000)).await?, None, "card cache cleared");
    // A card that was never queued: no error.
    api.on_card_deleted(CardId(999)).await?;
    Ok(())
}

#[tokio::test]
async fn created_card_gets_each_scheduled_type_at_now_and_status_change_rematches()
-> anyhow::Result<()> {
    let w = World::new().await?;
    // Online cards: carddata and package only; stopped cards: realname and protect.
    let online = domain::Intervals {
        carddata_interval_secs: Some(300),
        package_interval_secs: Some(900),
        ..Default::default()
    };
    let stopped = domain::Intervals {
        realname_interval_secs: Some(60),
        protect_interval_secs: Some(120),
        ..Default::default()
    };
    w.add_config(domain::PollingConfigInput {
        card_condition: Some(CardCondition::Online),
        ..config("online", 1, online)
    })
    .await?;
    w.add_config(domain::PollingConfigInput {
        card_condition: Some(CardCondition::Stopped),
        ..config("stopped", 2, stopped)
    })
    .await?;
    let ids = w.stores.cards.insert_bulk(&[new_card(1, 1)]).await?;
    let id = ids[0];
    let svc = w.lifecycle();
    assert_eq!(svc.on_card_created(id).await?.enqueued, 1);
    let shard = id.shard(SHARDS);
    let now = to_score(t0());
    assert_eq!(
        w.entries_of(id).await?,
        vec![
            (TaskType::Carddata, shard, now),
            (TaskType::Package, shard, now)
        ]
    );

    w.clock.advance(chrono::Duration::seconds(30));
    // The poll handlers hold a snapshot of the card; the event must drop it, or they would go
    // on polling the old state for up to the cache TTL.
    let cache = CardCache::new(w.pool.clone(), w.keys.clone());
    let snapshot = w.stores.cards.get(id).await?.expect("card");
    cache.set(&snapshot.identity(None)).await?;
    w.sql(&format!(
        "UPDATE tb_iot_card SET network_status = 0 WHERE id = {id}"
    ))
    .await?;
    svc.on_card_status_changed(id).await?;
    assert_eq!(cache.get(id).await?, None, "stale snapshot dropped");
    let later = to_score(t0() + chrono::Duration::seconds(30));
    assert_eq!(
        w.entries_of(id).await?,
        vec![
            (TaskType::Realname, shard, later),
            (TaskType::Protect, shard, later)
        ]
    );
    Ok(())
}

#[tokio::test]
async fn unmatched_card_is_not_queued() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.add_config(domain::PollingConfigInput {
        carrier_id: Some(domain::CarrierId(2)),
        ..config("carrier 2", 1, intervals(60, 60, 60, None))
    })
    .await?;
    let id = w.stores.cards.insert_bulk(&[new_card(1, 1)]).await?[0];
    let out = w.lifecycle().on_card_created(id).await?;
    assert_eq!(
        out,
        Outcome {
            removed: 1,
            unmatched: 1,
            ..Outcome::default()
        }
    );
    assert_eq!(w.entries_of(id).await?, vec![]);
    Ok(())
}

#[tokio::test]
async fn device_polling_switch_applies_to_every_bound_card() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.add_config(config("all", 1, intervals(600, 300, 3600, None)))
        .await?;
    let device = w
        .stores
        .devices
        .insert(&domain::NewDevice {
            device_no: "d1".into(),
            enable_polling: true,
        })
        .await?
        .id;
    let mut cards: Vec<_> = (0..3)
        .map(|n| domain::NewCard {
            device_id: Some(device),
            ..new_card(n, 1)
        })
        .collect();
    cards.push(new_card(9, 1)); // standalone, untouched
    let ids = w.stores.cards.insert_bulk(&cards).await?;
    let svc = w.lifecycle();
    svc.on_batch_cards_created(&ids).await?;

    w.stores.devices.set_enable_polling(device, false).await?;
    let out = svc.on_device_polling_changed(device).await?;
    assert_eq!(out.removed, 3);
    for id in &ids[..3] {
        assert_eq!(w.entries_of(*id).await?, vec![]);
    }
    assert_eq!(w.entries_of(ids[3]).await?.len(), 3);

    w.stores.devices.set_enable_polling(device, true).await?;
    assert_eq!(svc.on_device_polling_changed(device).await?.enqueued, 3);
    for id in &ids[..3] {
        assert_eq!(w.entries_of(*id).await?.len(), 3);
    }
    assert_eq!(
        svc.on_device_polling_changed(DeviceId(987_654)).await?,
        Outcome::default()
    );
    Ok(())
}

#[tokio::test]
async fn batch_of_10_000_created_cards_lands_in_the_right_shards() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.add_config(config("all", 1, intervals(600, 300, 3600, None)))
        .await?;
    let off = w
        .stores
        .devices
        .insert(&domain::NewDevice {
            device_no: "off".into(),
            enable_polling: false,
        })
        .await?
        .id;
    let on = w
        .stores
        .devices
        .insert(&domain::NewDevice {
            device_no: "on".into(),
            enable_polling: true,
        })
        .await?
        .id;
    // Every 10th card on the disabled device, every 7th with its own flag off, the rest on the
    // enabled device or standalone.
    let cards: Vec<_> = (0..10_000u64)
        .map(|n| domain::NewCard {
            enable_polling: n % 7 != 0,
            device_id: if n % 10 == 0 {
                Some(off)
            } else if n % 2 == 0 {
                Some(on)
            } else {
                None
            },
            ..new_card(n, 1)
        })
        .collect();
    let ids = w.stores.cards.insert_bulk(&cards).await?;
    let eligible: Vec<CardId> = ids
        .iter()
        .zip(&cards)
        .filter(|(_, c)| c.enable_polling && c.device_id != Some(off))
        .map(|(id, _)| *id)
        .collect();

    let started = Instant::now();
    let out = w.lifecycle().on_batch_cards_created(&ids).await?;
    let elapsed = started.elapsed();
    // A figure, not a check: speed is the bench's (a loaded CI machine took 6.2 s, a quiet
    // one well under 5).
    println!("10,000 cards: {elapsed:?}");
    assert_eq!(out.enqueued, eligible.len());
    assert_eq!(out.skipped, 10_000 - eligible.len());

    let queues = w.all_queues().await?;
    for t in [TaskType::Realname, TaskType::Carddata, TaskType::Package] {
        let mut seen = 0;
        for shard in 0..SHARDS {
            let members = queues.get(&(shard, t)).cloned().unwrap_or_default();
            assert!(members.keys().all(|id| CardId(*id).shard(SHARDS) == shard));
            seen += members.len();
        }
        assert_eq!(seen, eligible.len(), "{t}");
    }
    assert!(queues.keys().all(|(_, t)| *t != TaskType::Protect));
    Ok(())
}

/// Round trips of a batch: one `get_many`, one `enable_polling_of`, whatever the batch size.
#[tokio::test]
async fn batch_reads_the_stores_once() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.add_config(config("all", 1, intervals(600, 300, 3600, Some(60))))
        .await?;
    let template = {
        let id = w.stores.cards.insert_bulk(&[new_card(1, 1)]).await?[0];
        w.stores
            .cards
            .get(id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("card"))?
    };
    let ids: Vec<CardId> = (1..=10_000).map(CardId).collect();
    let cards: Vec<domain::Card> = ids
        .iter()
        .map(|&id| domain::Card {
            id,
            facts: domain::NewCard {
                device_id: Some(DeviceId(id.get() % 50)),
                ..template.facts.clone()
            },
            ..template.clone()
        })
        .collect();
    let mut card_store = MockCardStore::new();
    card_store
        .expect_get_many()
        .times(1)
        .returning(move |_| Ok(cards.clone()));
    let mut device_store = MockDeviceStore::new();
    device_store
        .expect_enable_polling_of()
        .times(1)
        .withf(|devices| devices.len() == 50)
        .returning(|devices| Ok(devices.iter().map(|d| (*d, d.get() != 0)).collect()));
    let svc = PollingLifecycleService::new(
        Arc::new(card_store),
        Arc::new(device_store),
        w.queue.clone(),
        w.configs.clone(),
        Arc::new(w.clock.clone()),
    );
    let out = svc.on_batch_cards_created(&ids).await?;
    assert_eq!(
        out.enqueued,
        10_000 - 200,
        "device 0 (ids divisible by 50) is disabled"
    );
    assert_eq!(out.skipped, 200);
    let depth = w.queue.get_total_queue_depth(TaskType::Protect).await?;
    assert_eq!(depth, 9_800);
    Ok(())
}
