//! `cmp_oldest_due_age_seconds{task}` beside `cmp_due_backlog{task}`: how late the oldest due
//! card is, what deploy/prometheus/alerts.yml compares with the interval. Its own test binary:
//! it installs the process's metrics recorder.

mod common;

use chrono::Utc;
use common::{Behaviour, Recorder, settings, wait_until, world};
use domain::{CardId, SystemClock, TaskType};
use scheduler::Scheduler;
use std::sync::Arc;
use std::time::Duration;
use task_handlers::{Registry, TaskHandler};
use tokio_util::sync::CancellationToken;

fn gauge(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[tokio::test]
async fn the_oldest_due_cards_age_is_exported_with_the_backlog() -> anyhow::Result<()> {
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
    let (_redis, queue, leases) = world().await?;
    // 50 cards due ten minutes ago; the four polls of a pool of 4 never finish.
    let ten_minutes_ago = Utc::now() - chrono::Duration::minutes(10);
    let entries: Vec<_> = (1..=50).map(|i| (CardId(i), ten_minutes_ago)).collect();
    queue.requeue_many(TaskType::Realname, &entries).await?;
    let handler = Recorder::new(TaskType::Realname, queue.clone(), Behaviour::Hang);
    let idle = Recorder::new(TaskType::Carddata, queue.clone(), Behaviour::Quick);
    let registry = Registry::new([
        handler.clone() as Arc<dyn TaskHandler>,
        idle as Arc<dyn TaskHandler>,
    ]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(4),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));

    let exported = wait_until(
        || {
            let text = handle.render();
            gauge(&text, r#"cmp_due_backlog{task="realname"}"#) == Some(46.0)
                && gauge(&text, r#"cmp_oldest_due_age_seconds{task="realname"}"#)
                    .is_some_and(|age| (600.0..700.0).contains(&age))
                && gauge(&text, r#"cmp_oldest_due_age_seconds{task="carddata"}"#).is_some()
        },
        Duration::from_secs(10),
    )
    .await;
    let text = handle.render();
    stop.cancel();
    run.await?;
    assert!(exported, "46 due, the oldest ten minutes late:\n{text}");
    // A type with nothing due is 0 late.
    assert_eq!(
        gauge(&text, r#"cmp_oldest_due_age_seconds{task="carddata"}"#),
        Some(0.0),
        "{text}"
    );
    Ok(())
}
