//! The metrics history (sample, rollup, prune, series) and the concurrency admin.

mod common;

use admin::concurrency::{ResetConcurrency, SetConcurrency, default_max};
use admin::history::HistoryRange;
use common::World;
use domain::{Clock as _, HistoryScope, TaskType};
use polling_queue::{GatewayOutcome, TaskOutcome};
use std::time::Duration;

#[tokio::test]
async fn the_history_samples_minutes_rolls_them_up_and_prunes_by_age() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.due_cards(TaskType::Carddata, 12, 90).await?;
    // Three polls (one failed) and two gateway calls (one throttled) in the previous minute.
    let minute_ago = w.clock.now() - chrono::Duration::seconds(60);
    w.clock.set(minute_ago);
    for outcome in [
        TaskOutcome::Success,
        TaskOutcome::Success,
        TaskOutcome::Failure,
    ] {
        w.counters
            .record(TaskType::Carddata, outcome, Duration::from_millis(30))
            .await?;
    }
    w.recent
        .record_gateway(GatewayOutcome::Ok, minute_ago)
        .await?;
    w.recent
        .record_gateway(GatewayOutcome::Throttled, minute_ago)
        .await?;
    w.sql(&format!(
        "INSERT INTO tb_card_state_log (iot_card_id, from_status, to_status, stop_reason, trigger, gateway_outcome, created_at) \
         VALUES (1, 1, 0, 'traffic_exhausted', 't', 'ok', '{}')",
        minute_ago.to_rfc3339()
    ))
    .await?;
    w.clock.set(minute_ago + chrono::Duration::seconds(60));

    let history = w.history();
    let written = history.sample().await?;
    let series = history
        .series(HistoryScope::Task(TaskType::Carddata), HistoryRange::Hour)
        .await?;
    let point = series
        .points
        .iter()
        .find(|p| p.bucket_at == written)
        .unwrap_or_else(|| panic!("{series:?}"));
    assert_eq!((point.polls, point.failures), (3, 1));
    assert_eq!(point.due_backlog, 12);
    assert!(point.oldest_due_age_secs >= 90);
    let fleet = history
        .series(HistoryScope::All, HistoryRange::Hour)
        .await?;
    let f = fleet
        .points
        .iter()
        .find(|p| p.bucket_at == written)
        .unwrap_or_else(|| panic!("{fleet:?}"));
    assert_eq!((f.gateway_calls, f.gateway_throttles), (2, 1));
    assert_eq!(f.stops.get("traffic_exhausted"), Some(&1));
    // The minute is in its hour and day.
    let month = history
        .series(HistoryScope::Task(TaskType::Carddata), HistoryRange::Month)
        .await?;
    assert_eq!(month.points.iter().map(|p| p.polls).sum::<i64>(), 3);
    let year = history
        .series(
            HistoryScope::Task(TaskType::Carddata),
            HistoryRange::ThirteenMonths,
        )
        .await?;
    assert_eq!(year.points.iter().map(|p| p.polls).sum::<i64>(), 3);

    // Two days later the minute points are gone, the hour and day points stay.
    w.clock.set(minute_ago + chrono::Duration::hours(49));
    history.sample().await?;
    assert_eq!(
        w.count(&format!(
            "SELECT count(*) FROM tb_polling_metrics_history WHERE resolution = 'minute' AND bucket_at = '{}'",
            written.to_rfc3339()
        ))
        .await?,
        0
    );
    let month = history
        .series(HistoryScope::Task(TaskType::Carddata), HistoryRange::Month)
        .await?;
    assert_eq!(month.points.iter().map(|p| p.polls).sum::<i64>(), 3);
    Ok(())
}

#[tokio::test]
async fn concurrency_lists_sets_validates_and_resets() -> anyhow::Result<()> {
    let w = World::new().await?;
    let defaults = default_max([64, 256, 64, 32]);
    assert_eq!(
        defaults,
        [512, 2048, 512, 256],
        "eight nodes' pools, as the worker"
    );
    let service = w.concurrency(defaults);
    let list = service.list().await?;
    assert_eq!(list.len(), 4);
    assert_eq!(list[1].max, 2048);
    assert_eq!(list[1].current, 0);
    for bad in [0, -1, 100_001] {
        assert!(matches!(
            service
                .set(TaskType::Carddata, SetConcurrency { max: bad })
                .await,
            Err(admin::AdminError::Invalid(_))
        ));
    }
    let set = service
        .set(TaskType::Carddata, SetConcurrency { max: 10 })
        .await?;
    assert_eq!((set.max, set.default_max), (10, 2048));
    // Every node's semaphore reads the same key.
    let other_node = w.concurrency(defaults);
    assert_eq!(other_node.get(TaskType::Carddata).await?.max, 10);
    let reset = service
        .reset(&ResetConcurrency {
            task_types: Some(vec![TaskType::Carddata]),
            clear_max: true,
        })
        .await?;
    assert_eq!(reset[0].max, 2048);
    Ok(())
}
