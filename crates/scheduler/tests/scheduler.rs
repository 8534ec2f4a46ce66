//! The dispatch loop against real Redis, with handlers that only record what they are given.

mod common;

use chrono::Utc;
use common::{Behaviour, Recorder, seed_due, settings, wait_until, world};
use domain::{CardId, SystemClock, TaskType};
use scheduler::Scheduler;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use task_handlers::{Registry, TaskHandler};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn every_due_card_is_handled_once_and_rescheduled() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, TaskType::Carddata, 2_000).await?;
    let handler = Recorder::new(TaskType::Carddata, queue.clone(), Behaviour::Quick);
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(64),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(wait_until(|| handler.seen().len() == 2_000, Duration::from_secs(20)).await);
    // The shutdown waits for the running polls (drained), so every reschedule is written.
    stop.cancel();
    let report = run.await?;
    assert!(report.drained);
    let seen = handler.seen();
    assert!(seen.values().all(|n| *n == 1), "no card handled twice");
    assert!(handler.max_running.load(Ordering::SeqCst) <= 64);
    assert_eq!(queue.get_due_backlog(TaskType::Carddata).await?, 0);
    assert_eq!(
        queue.get_total_queue_depth(TaskType::Carddata).await?,
        2_000
    );
    Ok(())
}

#[tokio::test]
async fn a_full_pool_dequeues_nothing() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, TaskType::Realname, 50).await?;
    let handler = Recorder::new(TaskType::Realname, queue.clone(), Behaviour::Hang);
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(4),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    // The four polls never finish: the pool stays full.
    assert!(wait_until(|| handler.seen().len() == 4, Duration::from_secs(5)).await);
    // A timed wait only to show that nothing more is dequeued while the pool is full.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(handler.seen().len(), 4);
    // Four in the pool; the other 46 are still due in Redis, not waiting in memory.
    assert_eq!(queue.get_due_backlog(TaskType::Realname).await?, 46);
    stop.cancel();
    let report = run.await?;
    assert_eq!(report.rescheduled, 4);
    assert!(handler.max_running.load(Ordering::SeqCst) <= 4);
    Ok(())
}

#[tokio::test]
async fn manual_triggers_come_first_and_keep_the_shard_score() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    // Card 7 is due in 25 minutes; a manual trigger must not wait for that.
    let later = Utc::now() + chrono::Duration::minutes(25);
    queue.requeue(CardId(7), TaskType::Carddata, later).await?;
    let before = queue.score_of(CardId(7), TaskType::Carddata).await?;
    queue.enqueue_manual(CardId(7), TaskType::Carddata).await?;
    let handler = Recorder::new(TaskType::Carddata, queue.clone(), Behaviour::Quick);
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(8),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(
        wait_until(
            || handler.seen().contains_key(&CardId(7)),
            Duration::from_millis(500)
        )
        .await
    );
    stop.cancel();
    run.await?;
    // The handler rescheduled it (1 h); nothing else touched the entry.
    let after = queue.score_of(CardId(7), TaskType::Carddata).await?;
    assert!(before.is_some() && after > before);
    Ok(())
}

#[tokio::test]
async fn a_panicking_handler_loses_no_card() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, TaskType::Package, 20).await?;
    let handler = Recorder::new(
        TaskType::Package,
        queue.clone(),
        Behaviour::PanicOn(CardId(5)),
    );
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(8),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(wait_until(|| handler.seen().len() == 20, Duration::from_secs(5)).await);
    // The shutdown waits for the polls, the panicked one's reschedule included.
    stop.cancel();
    assert!(run.await?.drained);
    // Card 5 is back at about now + retry interval (60 s), not lost, not leased for 300 s.
    let score = queue.score_of(CardId(5), TaskType::Package).await?.unwrap();
    let now = Utc::now().timestamp() as f64;
    assert!(
        score > now + 50.0 && score < now + 70.0,
        "score {score} vs now {now}"
    );
    Ok(())
}

#[tokio::test]
async fn shutdown_hands_unfinished_cards_back_due_now() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, TaskType::Protect, 6).await?;
    let handler = Recorder::new(TaskType::Protect, queue.clone(), Behaviour::Hang);
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(4),
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(wait_until(|| handler.seen().len() == 4, Duration::from_secs(2)).await);
    stop.cancel();
    let report = tokio::time::timeout(Duration::from_secs(5), run).await??;
    assert!(!report.drained);
    assert_eq!(report.rescheduled, 4);
    // All six are due now: the four hung ones were handed back, the two others never left.
    assert_eq!(queue.get_due_backlog(TaskType::Protect).await?, 6);
    Ok(())
}
