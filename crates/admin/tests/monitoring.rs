//! Monitoring through the service: the queue-depth scenarios (16 shards of 100..1600 -> 13,600;
//! shard 5 at 600,000; one unreadable shard -> the other 15 and its warning), the oldest
//! due age, rates, the p95, init progress and the fleet counts.

mod common;

use common::{SHARDS, World};
use domain::TaskType;
use fred::prelude::*;
use polling_queue::TaskOutcome;
use std::time::Duration;

async fn seed_100_to_1600(w: &World) -> anyhow::Result<()> {
    for shard in 0..SHARDS {
        w.fill_shard(shard, TaskType::Carddata, u64::from(shard + 1) * 100, 3600)
            .await?;
    }
    Ok(())
}

fn carddata(stats: &admin::monitoring::PollingStats) -> &admin::monitoring::TaskTypeStats {
    stats
        .task_types
        .iter()
        .find(|t| t.task_type == TaskType::Carddata)
        .unwrap_or_else(|| panic!("no carddata in {stats:?}"))
}

#[tokio::test]
async fn sixteen_shards_of_100_to_1600_total_13600() -> anyhow::Result<()> {
    let w = World::new().await?;
    seed_100_to_1600(&w).await?;
    let stats = w.monitoring().polling_stats().await?;
    let c = carddata(&stats);
    assert_eq!(c.total_depth, 13_600);
    assert_eq!(c.due_backlog, 0, "all due in an hour");
    assert!(c.missing_shards.is_empty());
    assert!(stats.warnings.is_empty());
    assert_eq!(
        w.queue.get_total_queue_depth(TaskType::Carddata).await?,
        13_600
    );
    let queues = w.monitoring().queues().await;
    let cd = queues
        .iter()
        .find(|q| q.task_type == TaskType::Carddata)
        .unwrap_or_else(|| panic!("carddata queues"));
    assert_eq!(cd.shards.len(), SHARDS as usize);
    assert_eq!(cd.shards[15].depth, 1_600);
    assert_eq!(cd.summary.depth, 13_600);
    Ok(())
}

#[tokio::test]
async fn shard_five_holding_600000_reports_600000() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.fill_shard(5, TaskType::Carddata, 600_000, 60).await?;
    assert_eq!(
        w.queue.get_queue_depth(5, TaskType::Carddata).await?,
        600_000
    );
    let queues = w.monitoring().queues().await;
    let cd = queues
        .iter()
        .find(|q| q.task_type == TaskType::Carddata)
        .unwrap_or_else(|| panic!("carddata queues"));
    assert_eq!(cd.shards[5].depth, 600_000);
    assert_eq!(
        carddata(&w.monitoring().polling_stats().await?).total_depth,
        600_000
    );
    Ok(())
}

#[tokio::test]
async fn an_unreadable_shard_is_skipped_with_the_seeds_warning() -> anyhow::Result<()> {
    let w = World::new().await?;
    seed_100_to_1600(&w).await?;
    // Shard 3 (400 entries) becomes unreadable: a string where the sorted set was (WRONGTYPE).
    let key = w.keys.shard_queue(3, TaskType::Carddata);
    let _: i64 = w.pool.del(key.as_str()).await?;
    let _: () = w
        .pool
        .set(key.as_str(), "broken", None, None, false)
        .await?;
    let stats = w.monitoring().polling_stats().await?;
    let c = carddata(&stats);
    assert_eq!(c.total_depth, 13_600 - 400);
    assert_eq!(c.missing_shards, vec![3]);
    assert!(
        stats
            .warnings
            .iter()
            .any(|m| m == "分片 3 队列深度查询失败"),
        "{:?}",
        stats.warnings
    );
    // The queue manager's own total agrees.
    assert_eq!(
        w.queue.get_total_queue_depth(TaskType::Carddata).await?,
        13_200
    );
    Ok(())
}

#[tokio::test]
async fn oldest_due_age_backlog_rates_p95_and_fleet() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.due_cards(TaskType::Realname, 40, 120).await?;
    w.fill_shard(2, TaskType::Realname, 10, 600).await?;
    // Runs a minute ago: 8 successes (10 ms each), 2 failures (2 s each).
    w.clock.advance(chrono::Duration::minutes(-1));
    for _ in 0..8 {
        w.counters
            .record(
                TaskType::Realname,
                TaskOutcome::Success,
                Duration::from_millis(10),
            )
            .await?;
    }
    for _ in 0..2 {
        w.counters
            .record(
                TaskType::Realname,
                TaskOutcome::Failure,
                Duration::from_secs(2),
            )
            .await?;
    }
    w.clock.advance(chrono::Duration::minutes(1));
    w.sql(
        "INSERT INTO tb_iot_card (iccid, carrier_id, network_status, stop_reason, enable_polling) VALUES \
         ('a1', 1, 1, '', true), ('a2', 1, 0, 'manual', true), ('a3', 1, 0, 'traffic_exhausted', false)",
    )
    .await?;

    let stats = w.monitoring().polling_stats().await?;
    let r = stats
        .task_types
        .iter()
        .find(|t| t.task_type == TaskType::Realname)
        .unwrap_or_else(|| panic!("realname"));
    assert_eq!(r.due_backlog, 40);
    assert_eq!(r.total_depth, 50);
    assert!(
        (119..=121).contains(&r.oldest_due_age_secs),
        "{}",
        r.oldest_due_age_secs
    );
    assert!((r.failure_rate - 0.2).abs() < 1e-9, "{}", r.failure_rate);
    assert!(
        (r.polls_per_minute - 2.0).abs() < 1e-9,
        "10 polls over 5 minutes"
    );
    assert_eq!(stats.cards.cards, 3);
    assert_eq!(stats.cards.polling_enabled, 2);
    assert_eq!(stats.cards.source, "exact");
    assert_eq!(stats.cards.stopped_by_reason.get("manual"), Some(&1));
    assert_eq!(stats.initializer.status, "never_run");

    let tasks = w.monitoring().tasks().await?;
    let rt = tasks
        .iter()
        .find(|t| t.task_type == TaskType::Realname)
        .unwrap_or_else(|| panic!("realname tasks"));
    assert_eq!((rt.success, rt.failure, rt.requeued), (8, 2, 0));
    assert!(
        (rt.mean_duration_ms - 408.0).abs() < 1e-9,
        "{}",
        rt.mean_duration_ms
    );
    assert_eq!(
        rt.p95_duration_ms,
        Some(2_500),
        "the 2 s runs are the top 20 %"
    );
    Ok(())
}
