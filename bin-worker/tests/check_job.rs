//! The periodic queue check of a running worker: it finds what `cmp-worker check` finds,
//! exports the counts on `/metrics`, and repairs nothing.

mod common;

use common::*;
use domain::TaskType;
use fred::prelude::*;
use std::time::Duration;

#[tokio::test]
async fn the_worker_checks_the_queues_periodically_exports_the_counts_and_repairs_nothing()
-> anyhow::Result<()> {
    let w = world(40, 600, 0).await?;
    let bind = free_port()?;
    let mut worker = spawn_worker(
        &w,
        &[
            ("CMP_WORKER_BIND", bind.as_str()),
            ("CMP_CHECK_INTERVAL_SECS", "1"),
        ],
    )?;
    let metrics = || http_get(&bind, "/metrics");
    let clean = eventually(Duration::from_secs(30), || async {
        let text = metrics().await.unwrap_or_default();
        Ok(all_queued(&w).await?
            && w.queue.reconcile_progress().read().await?.status == "completed"
            && metric_sum(&text, "cmp_queue_check_cards", "") == 40.0
            && metric_sum(&text, "cmp_queue_check_entries", "") == 0.0)
    })
    .await?;
    assert!(
        clean,
        "initialised, reconciled at start, then checked clean"
    );

    // Damage: one card missing from its carddata queue, a member that is no card, and a card
    // on a shard it does not belong to (both due in a day, so no poll removes them first). The start-up reconciliation, which
    // would add the missing entry back, has completed.
    let pool = w.env.redis.pool().await?;
    let keys = w.queue.keys().clone();
    let lost = w.cards[3];
    let shard = w.queue.shard_of(lost);
    let _: i64 = pool
        .zrem(
            keys.shard_queue(shard, TaskType::Carddata),
            lost.to_string(),
        )
        .await?;
    let tomorrow = chrono::Utc::now().timestamp() as f64 + 86_400.0;
    let stray = keys.shard_queue(shard, TaskType::Realname);
    let no_card = (16 * 1_000_000 + i64::from(shard)).to_string();
    let _: i64 = pool
        .zadd(
            &stray,
            None,
            None,
            false,
            false,
            (tomorrow, no_card.as_str()),
        )
        .await?;
    let wrong = keys.shard_queue((shard + 1) % 16, TaskType::Package);
    let _: i64 = pool
        .zadd(
            &wrong,
            None,
            None,
            false,
            false,
            (tomorrow, lost.to_string()),
        )
        .await?;

    let found = eventually(Duration::from_secs(30), || async {
        let text = metrics().await.unwrap_or_default();
        let kind = |k: &str| metric_sum(&text, "cmp_queue_check_entries", &format!("kind=\"{k}\""));
        Ok(kind("missing") == 1.0 && kind("not_live") == 1.0 && kind("wrong_shard") == 1.0)
    })
    .await?;
    let text = metrics().await.unwrap_or_default();
    assert!(found, "the periodic check reports the damage:\n{text}");
    assert_eq!(
        metric_sum(&text, "cmp_queue_check_entries", "kind=\"unscheduled\""),
        0.0
    );
    assert!(metric_sum(&text, "cmp_queue_check_completed_timestamp_seconds", "") > 0.0);

    // Nothing repaired by the job.
    assert_eq!(w.queue.score_of(lost, TaskType::Carddata).await?, None);
    let stray_score: Option<f64> = pool.zscore(&stray, no_card.as_str()).await?;
    assert_eq!(stray_score, Some(tomorrow));
    assert!(terminate(&mut worker).await?.success());
    Ok(())
}
