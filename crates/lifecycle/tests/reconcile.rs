//! After a polling config changes, the queues follow (`docs/rules.md`, "Lifecycle", third row): a
//! config edit published the way the API publishes it changes the queue membership of exactly
//! the cards it affects, key by key, and nothing else.

mod common;

use chrono::Duration as Span;
use common::{World, config, intervals, t0};
use domain::{CardId, TaskType};
use lifecycle::{QueueReconciler, ReconcileSettings};
use polling_config::PollingConfigManager;
use polling_queue::{SingletonLease, to_score};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Waits until the worker's configs are no longer `old` (the published change arrived), then
/// until a run for them has completed.
async fn wait_reconciled(
    reconciler: &QueueReconciler,
    configs: &PollingConfigManager,
    old: Option<u64>,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while Some(configs.snapshot().fingerprint()) == old {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the change never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    loop {
        let fingerprint = configs.snapshot().fingerprint();
        let state = reconciler.progress().read().await.expect("progress");
        if state.completed_for(fingerprint) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no completed reconciliation for the configs in force: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_edit_changes_exactly_the_affected_cards_queues() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.add_config(config(
        "all cards",
        10,
        intervals(600, 300, 3600, Some(120)),
    ))
    .await?;
    let carrier_1: Vec<CardId> = (100..106).map(CardId).collect();
    let carrier_2: Vec<CardId> = (200..204).map(CardId).collect();
    for card in &carrier_1 {
        w.card_with_id(card.get(), true, None).await?;
    }
    for card in &carrier_2 {
        let id = card.get();
        w.sql(&format!(
            "INSERT INTO tb_iot_card (id, iccid, carrier_id, real_name_status, network_status) \
             VALUES ({id}, 'iccid-{id}', 2, 1, 1)"
        ))
        .await?;
    }
    for card in carrier_1.iter().chain(&carrier_2) {
        w.queue_everywhere(*card).await?;
    }
    let shutdown = CancellationToken::new();
    let refresher = w.configs.spawn_refresher(shutdown.clone()).await?;
    let reconciler = QueueReconciler::new(
        w.cards(),
        w.queue.clone(),
        w.configs.clone(),
        SingletonLease::new(w.pool.clone(), w.keys.clone()),
        Arc::new(w.clock.clone()),
        ReconcileSettings {
            page_size: 3,
            ..ReconcileSettings::default()
        },
    );
    let follower = tokio::spawn(reconciler.clone().follow_config_changes(shutdown.clone()));
    wait_reconciled(&reconciler, &w.configs, None).await;
    let before = w.all_queues().await?;

    // The API process: its own manager, writes the config, publishes the invalidation.
    let api = PollingConfigManager::new(w.config_store(), w.pool.clone(), w.keys.clone());
    w.clock.advance(Span::seconds(60));
    let old = Some(w.configs.snapshot().fingerprint());
    let narrow = w
        .stores
        .configs
        .insert(&domain::PollingConfigInput {
            carrier_id: Some(domain::CarrierId(2)),
            intervals: domain::Intervals {
                package_interval_secs: None,
                ..intervals(600, 300, 3600, None)
            },
            ..config(
                "carrier 2: usage and real-name only",
                1,
                intervals(600, 300, 3600, None),
            )
        })
        .await?;
    api.publish_changed().await?;
    wait_reconciled(&reconciler, &w.configs, old).await;

    for card in &carrier_1 {
        assert_eq!(
            w.entries_of(*card).await?,
            TaskType::ALL
                .iter()
                .map(|t| (*t, card.shard(16), to_score(t0())))
                .collect::<Vec<_>>(),
            "card {card} of carrier 1 untouched"
        );
    }
    for card in &carrier_2 {
        assert_eq!(
            w.entries_of(*card).await?,
            vec![
                (TaskType::Realname, card.shard(16), to_score(t0())),
                (TaskType::Carddata, card.shard(16), to_score(t0())),
            ],
            "card {card} of carrier 2: package and protect removed, the rest kept"
        );
    }

    // Disabled again: carrier 2's cards come back to package and protect, due now.
    w.clock.advance(Span::seconds(60));
    let old = Some(w.configs.snapshot().fingerprint());
    w.stores.configs.set_enabled(narrow.id, false).await?;
    api.publish_changed().await?;
    wait_reconciled(&reconciler, &w.configs, old).await;
    let now = to_score(t0() + Span::seconds(120));
    for card in &carrier_2 {
        let shard = card.shard(16);
        assert_eq!(
            w.entries_of(*card).await?,
            vec![
                (TaskType::Realname, shard, to_score(t0())),
                (TaskType::Carddata, shard, to_score(t0())),
                (TaskType::Package, shard, now),
                (TaskType::Protect, shard, now),
            ],
            "card {card}"
        );
    }
    let after = w.all_queues().await?;
    for ((shard, task), members) in &before {
        for (card, score) in members {
            if *card < 200 {
                assert_eq!(after[&(*shard, *task)].get(card), Some(score));
            }
        }
    }
    let state = reconciler.progress().read().await?;
    assert_eq!(state.processed, 10);
    assert_eq!(
        (state.added, state.removed),
        (8, 0),
        "the last run's changes"
    );

    shutdown.cancel();
    follower.await?;
    refresher.await?;
    Ok(())
}

/// A reconciliation reads a page of cards, then aligns it. A real-name poll that verifies one
/// of them in between writes the new status and aligns the card (protect added, which only the
/// real-named config schedules); the page's stale facts then remove protect again. The
/// reconciliation re-reads what it removed and puts the entry back: the card is never left out
/// of a queue its facts schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_added_by_a_poll_while_the_page_was_read_is_kept() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.add_config(domain::PollingConfigInput {
        card_condition: Some(domain::CardCondition::NotRealname),
        ..config("not real-named", 20, intervals(600, 300, 3600, None))
    })
    .await?;
    w.add_config(config("default", 100, intervals(600, 300, 3600, Some(120))))
        .await?;
    let card = CardId(100);
    w.sql(
        "INSERT INTO tb_iot_card (id, iccid, carrier_id, real_name_status, network_status) \
         VALUES (100, 'iccid-100', 1, 0, 1)",
    )
    .await?;
    for t in [TaskType::Realname, TaskType::Carddata, TaskType::Package] {
        w.queue.requeue(card, t, t0()).await?;
    }

    // The store as the reconciler sees it: the real one, with the real-name poll landing
    // right after the page was read.
    let real = w.cards();
    let lifecycle = w.lifecycle();
    let handle = tokio::runtime::Handle::current();
    let polled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut cards = domain::store::MockCardStore::new();
    {
        let (real, handle) = (real.clone(), handle.clone());
        cards
            .expect_page_polling_enabled()
            .returning(move |after, limit| {
                tokio::task::block_in_place(|| {
                    handle.block_on(async {
                        let page = real.page_polling_enabled(after, limit).await?;
                        if !page.is_empty() && !polled.swap(true, Ordering::SeqCst) {
                            let written = real
                                .set_real_name(card, domain::RealNameStatus::Verified)
                                .await?
                                .expect("the card is live");
                            lifecycle
                                .on_card_facts_changed(&written.card)
                                .await
                                .expect("the poll aligns the card");
                        }
                        Ok(page)
                    })
                })
            });
    }
    {
        let (real, handle) = (real.clone(), handle.clone());
        cards.expect_polling_enabled_among().returning(move |ids| {
            tokio::task::block_in_place(|| handle.block_on(real.polling_enabled_among(ids)))
        });
    }
    cards
        .expect_get_many()
        .returning(move |ids| tokio::task::block_in_place(|| handle.block_on(real.get_many(ids))));

    let reconciler = QueueReconciler::new(
        Arc::new(cards),
        w.queue.clone(),
        w.configs.clone(),
        SingletonLease::new(w.pool.clone(), w.keys.clone()),
        Arc::new(w.clock.clone()),
        ReconcileSettings::default(),
    );
    let report = reconciler
        .ensure_current(&CancellationToken::new())
        .await?
        .expect("this node ran the reconciliation");

    let shard = card.shard(16);
    assert_eq!(
        w.entries_of(card).await?,
        vec![
            (TaskType::Realname, shard, to_score(t0())),
            (TaskType::Carddata, shard, to_score(t0())),
            (TaskType::Package, shard, to_score(t0())),
            (TaskType::Protect, shard, to_score(t0())),
        ],
        "protect, which the verified card's config schedules, is queued (due now)"
    );
    assert_eq!(
        (report.aligned.removed, report.aligned.added),
        (1, 1),
        "removed on the stale page, put back on the facts read after"
    );
    Ok(())
}
