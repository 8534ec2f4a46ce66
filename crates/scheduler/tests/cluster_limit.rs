//! A cluster-wide concurrency limit below the local pool must not make the loop spin: with
//! `polling:concurrency:max:carddata` = 1, 500 due cards and a 200 ms carrier, the loop must
//! wait for the slot instead of cycling refused cards through Redis.

mod common;

use common::{seed_due, settings, wait_until, world};
use domain::{CardId, SystemClock, TaskType};
use polling_queue::{ConcurrencySemaphore, Keys, PollingQueueManager, SemaphoreSettings};
use scheduler::Scheduler;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use task_handlers::{Outcome, Registry, TaskHandler};
use tokio_util::sync::CancellationToken;

const T: TaskType = TaskType::Carddata;

/// What `PollingBase::run` does with the slot: take it or put the card back due now.
struct SlotHandler {
    queue: PollingQueueManager,
    semaphore: ConcurrencySemaphore,
    polls: AtomicUsize,
    refused: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
}

#[async_trait::async_trait]
impl TaskHandler for SlotHandler {
    fn task_type(&self) -> TaskType {
        T
    }

    async fn handle(&self, card: CardId) -> Outcome {
        let now = chrono::Utc::now();
        match self.semaphore.acquire(T).await {
            Ok(Some(permit)) => {
                let running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
                self.max_running.fetch_max(running, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(200)).await;
                self.running.fetch_sub(1, Ordering::SeqCst);
                let _ = self.semaphore.release(permit).await;
                self.polls.fetch_add(1, Ordering::SeqCst);
                let _ = self
                    .queue
                    .reschedule(card, T, now + chrono::Duration::hours(1))
                    .await;
                Outcome::Success
            }
            _ => {
                self.refused.fetch_add(1, Ordering::SeqCst);
                let _ = self.queue.reschedule(card, T, now).await;
                Outcome::RequeuedFull
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_cluster_pool_is_waited_for_not_cycled() -> anyhow::Result<()> {
    let (redis, queue, leases) = world().await?;
    let semaphore = ConcurrencySemaphore::new(
        redis.pool().await?,
        Keys::new(redis.prefix.clone()),
        SemaphoreSettings::uniform(64, Duration::from_secs(300)),
        Arc::new(SystemClock),
    );
    semaphore.set_max(T, 1).await?;
    seed_due(&queue, T, 500).await?;
    let handler = Arc::new(SlotHandler {
        queue: queue.clone(),
        semaphore: semaphore.clone(),
        polls: AtomicUsize::new(0),
        refused: AtomicUsize::new(0),
        running: AtomicUsize::new(0),
        max_running: AtomicUsize::new(0),
    });
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(64),
    )
    .with_semaphore(semaphore);
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    assert!(
        wait_until(
            || handler.polls.load(Ordering::SeqCst) >= 8,
            Duration::from_secs(10)
        )
        .await,
        "polls go on at the limit's pace"
    );
    stop.cancel();
    run.await?;

    let polls = handler.polls.load(Ordering::SeqCst);
    let refused = handler.refused.load(Ordering::SeqCst);
    assert_eq!(
        handler.max_running.load(Ordering::SeqCst),
        1,
        "the limit held"
    );
    // Before: every free room of the local pool (64) was dequeued, refused and put back, as
    // fast as Redis answered: hundreds of refusals per poll. Now a card is dequeued only when
    // the slot is free; a refusal is a race lost at the moment a slot changes hands.
    assert!(
        refused <= polls + 2,
        "{refused} cards refused a slot for {polls} polls"
    );
    assert_eq!(queue.get_total_queue_depth(T).await?, 500, "no card lost");
    Ok(())
}
