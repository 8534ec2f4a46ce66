//! Lost Redis: when every key of the deployment is gone (a restart without persistence), the
//! worker's [`InitWatchdog`] notices and re-initialises by itself, once cluster-wide, and the
//! readiness part "queues" says "reinitialising" until it has. When only some hash slots lose
//! their keys (one cluster node restarted empty) while the progress hash survives, the canaries
//! of those slots are gone and the watchdog repairs; a queue emptied on purpose is no loss.

mod common;

use common::{SHARDS, World, config, intervals};
use fred::util::redis_keyslot;
use lifecycle::{CardInitializer, CheckSettings, InitSettings, InitWatchdog, QueueChecker};
use polling_queue::{RedisKey, SingletonLease};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const CARDS: i64 = 30;
/// Cards 7, 14, 21, 28 have polling disabled.
const ENABLED: u64 = 26;

async fn world() -> anyhow::Result<(World, InitWatchdog)> {
    let (w, watchdog, _) = world_with_initializer().await?;
    Ok((w, watchdog))
}

async fn world_with_initializer() -> anyhow::Result<(World, InitWatchdog, CardInitializer)> {
    let w = World::new().await?;
    w.add_config(config("all", 10, intervals(600, 300, 3600, Some(120))))
        .await?;
    for id in 1..=CARDS {
        w.card_with_id(id, id % 7 != 0, None).await?;
    }
    let initializer = CardInitializer::new(
        w.cards(),
        w.configs.clone(),
        w.pool.clone(),
        w.keys.clone(),
        Arc::new(w.clock.clone()),
        InitSettings {
            shard_count: SHARDS,
            page_size: 8,
            ..InitSettings::default()
        },
    );
    let watchdog = InitWatchdog::new(initializer.clone(), Duration::from_millis(50));
    Ok((w, watchdog, initializer))
}

/// Deletes every key under the test's prefix (never FLUSHALL: other tests share the server);
/// `keep` survives. SCAN per primary and one UNLINK per key, so it works on a cluster too.
async fn flush(w: &World, keep: Option<&str>) -> anyhow::Result<u64> {
    let client = w.pool.next();
    let keys: Vec<String> = test_support::keys_matching(client, &format!("{}*", w.keys.prefix()))
        .await?
        .into_iter()
        .filter(|k| Some(k.as_str()) != keep)
        .collect();
    test_support::unlink_each(client, &keys).await
}

/// Whether every enabled card is in each of its four queues, and nothing else is queued.
async fn fully_queued(w: &World) -> anyhow::Result<bool> {
    let report = QueueChecker::new(
        w.cards(),
        w.queue.clone(),
        w.configs.clone(),
        Arc::new(w.clock.clone()),
        CheckSettings {
            shard_count: SHARDS,
            ..CheckSettings::default()
        },
    )
    .run()
    .await?;
    Ok(report.clean() && report.cards == ENABLED && report.members == ENABLED * 4)
}

async fn wait_until_queued_and_ready(w: &World, watchdog: &InitWatchdog) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !(fully_queued(w).await? && watchdog.readiness().await.is_ok()) {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the queues never came back; readiness: {:?}",
            watchdog.readiness().await
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_card_is_queued_again_after_redis_loses_every_key() -> anyhow::Result<()> {
    let (w, watchdog) = world().await?;
    assert!(
        watchdog.readiness().await.is_err(),
        "not ready before the first run"
    );
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(watchdog.clone().run(shutdown.clone()));
    // At start: the first look initialises.
    wait_until_queued_and_ready(&w, &watchdog).await?;
    assert_eq!(watchdog.readiness().await, Ok(()));

    let deleted = flush(&w, None).await?;
    assert!(
        deleted >= ENABLED,
        "the queues and the progress hash were there"
    );
    wait_until_queued_and_ready(&w, &watchdog).await?;
    assert_eq!(watchdog.readiness().await, Ok(()));

    shutdown.cancel();
    running.await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_says_reinitialising_while_another_node_reinitialises() -> anyhow::Result<()> {
    let (w, watchdog) = world().await?;
    watchdog.look().await?;
    assert_eq!(watchdog.readiness().await, Ok(()));
    assert!(fully_queued(&w).await?);

    // Another node holds the initializer's lease: this node must not run it too.
    let leases = SingletonLease::new(w.pool.clone(), w.keys.clone());
    let lease = leases
        .try_acquire("initializer", Duration::from_secs(30))
        .await?;
    anyhow::ensure!(lease.is_some(), "the lease is free once the run is done");
    let lease_key = w.keys.render(&RedisKey::Lease {
        job: "initializer".into(),
    });
    flush(&w, Some(&lease_key)).await?;
    watchdog.look().await?;
    let why = watchdog.readiness().await.err().unwrap_or_default();
    assert!(why.starts_with("reinitialising"), "{why}");
    assert!(watchdog.reinitialising());
    assert!(
        !fully_queued(&w).await?,
        "nothing ran while the lease was held"
    );

    // The other node died: its lease goes, and the next look runs the initializer here.
    if let Some(lease) = lease {
        leases.release(lease).await?;
    }
    watchdog.look().await?;
    assert_eq!(watchdog.readiness().await, Ok(()));
    assert!(!watchdog.reinitialising());
    assert!(fully_queued(&w).await?);
    Ok(())
}

/// What one cluster node losing its data does to the test's keys: every key (queues and
/// canaries) in the hash slots of the queues of `shards` is deleted; the rest, the progress
/// hash included, stays.
async fn lose_slots_of(w: &World, shards: &[u32]) -> anyhow::Result<u64> {
    let slots: HashSet<u16> = shards
        .iter()
        .flat_map(|s| {
            domain::TaskType::ALL.map(|t| redis_keyslot(w.keys.shard_queue(*s, t).as_bytes()))
        })
        .collect();
    let progress = w.keys.render(&RedisKey::InitProgress);
    let client = w.pool.next();
    let keys: Vec<String> = test_support::keys_matching(client, &format!("{}*", w.keys.prefix()))
        .await?
        .into_iter()
        .filter(|k| slots.contains(&redis_keyslot(k.as_bytes())) && *k != progress)
        .collect();
    test_support::unlink_each(client, &keys).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queues_of_slots_that_lost_their_keys_are_repaired_with_the_progress_intact()
-> anyhow::Result<()> {
    let (w, watchdog, initializer) = world_with_initializer().await?;
    watchdog.look().await?;
    assert!(fully_queued(&w).await?);
    let before = initializer.progress().await?;
    assert_eq!(
        before.as_ref().and_then(|p| p.mode.as_deref()),
        Some("initial")
    );

    let deleted = lose_slots_of(&w, &[0, 5, 11]).await?;
    assert!(
        deleted >= 4,
        "queues and canaries of three shards were there: {deleted}"
    );
    assert!(!fully_queued(&w).await?, "the loss shows in the check");
    let why = watchdog.readiness().await.err().unwrap_or_default();
    assert!(
        why.starts_with("reinitialising"),
        "not ready while slots are lost: {why}"
    );

    watchdog.look().await?;
    assert!(fully_queued(&w).await?, "every card back in its queues");
    assert_eq!(watchdog.readiness().await, Ok(()));
    let after = initializer.progress().await?;
    assert_eq!(
        after.as_ref().and_then(|p| p.mode.as_deref()),
        Some("repair")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_emptied_on_purpose_is_no_loss() -> anyhow::Result<()> {
    let (w, watchdog, initializer) = world_with_initializer().await?;
    watchdog.look().await?;
    let before = initializer.progress().await?;

    // The last cards of a queue removed (or a config unscheduling a type): the key is gone,
    // the canary of its slot is not.
    let queue = w.keys.shard_queue(3, domain::TaskType::Package);
    let _: i64 = fred::interfaces::KeysInterface::del(&w.pool, queue.as_str()).await?;
    watchdog.look().await?;
    watchdog.look().await?;
    assert_eq!(watchdog.readiness().await, Ok(()));
    assert_eq!(
        initializer.progress().await?,
        before,
        "no run: the progress hash is as the initial run left it"
    );
    Ok(())
}
