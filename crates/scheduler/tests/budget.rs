//! The carrier budget seen from the dispatch loop: cards wait in their sorted set while the
//! budget has no room; and a card handed back due now while its poll is still running is polled
//! again, not left leased.

mod common;

use common::{seed_due, settings, wait_until, world};
use domain::{CardId, SystemClock, TaskType};
use polling_queue::{PollingQueueManager, SingletonLease, is_lease_score};
use scheduler::{DispatchBudget, Scheduler};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use task_handlers::{Outcome, Registry, TaskHandler};
use tokio_util::sync::CancellationToken;

const T: TaskType = TaskType::Carddata;

/// A budget of tokens the test hands out; a poll spends one (its reservation).
#[derive(Default)]
struct Tokens(AtomicUsize);

#[async_trait::async_trait]
impl DispatchBudget for Tokens {
    async fn room(&self, _task: TaskType) -> Option<usize> {
        Some(self.0.load(Ordering::SeqCst))
    }

    fn dispatched(&self, _task: TaskType, _polls: usize) {}
}

struct Spender {
    queue: PollingQueueManager,
    tokens: Arc<Tokens>,
    /// The cards polled, in the order their polls started.
    polled: Mutex<Vec<CardId>>,
}

impl Spender {
    fn new(queue: &PollingQueueManager, tokens: &Arc<Tokens>) -> Arc<Self> {
        Arc::new(Self {
            queue: queue.clone(),
            tokens: tokens.clone(),
            polled: Mutex::new(Vec::new()),
        })
    }

    fn polled(&self) -> Vec<CardId> {
        self.polled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[async_trait::async_trait]
impl TaskHandler for Spender {
    fn task_type(&self) -> TaskType {
        T
    }

    async fn handle(&self, card: CardId) -> Outcome {
        let _ = self
            .tokens
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| t.checked_sub(1));
        self.polled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(card);
        let next = chrono::Utc::now() + chrono::Duration::hours(1);
        let _ = self.queue.reschedule(card, T, next).await;
        Outcome::Success
    }
}

/// A scheduler (pool 64) of one [`Spender`] under the budget `tokens`.
fn spending(
    queue: &PollingQueueManager,
    leases: SingletonLease,
    tokens: &Arc<Tokens>,
) -> (Arc<Spender>, Scheduler) {
    let handler = Spender::new(queue, tokens);
    let registry = Registry::new([handler.clone() as Arc<dyn TaskHandler>]);
    let sched = Scheduler::new(
        queue.clone(),
        registry,
        leases,
        Arc::new(SystemClock),
        settings(64),
    )
    .with_budget(tokens.clone());
    (handler, sched)
}

// 300 due cards, a pool of 64, a budget of 10 calls every 100 ms: the loop takes no more cards
// than the budget lets start; the others wait in the sorted set, due, not leased.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_dequeues_no_more_than_the_budget_lets_start() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, T, 300).await?;
    let tokens = Arc::new(Tokens::default());
    let (handler, sched) = spending(&queue, leases, &tokens);
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    let mut issued = 0;
    for _ in 0..10 {
        tokens.0.fetch_add(10, Ordering::SeqCst);
        issued += 10;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let the last tokens be spent, then stop.
    assert!(
        wait_until(
            || tokens.0.load(Ordering::SeqCst) == 0,
            Duration::from_secs(5)
        )
        .await
    );
    stop.cancel();
    run.await?;

    let polls = handler.polled().len();
    // A round may take what the budget showed before the previous round's polls spent it: a
    // few cards beyond, never the pool's 64.
    assert!(
        (issued..=issued + 20).contains(&polls),
        "{polls} polls for {issued} tokens"
    );
    let mut leased = 0;
    let mut due = 0;
    let now = chrono::Utc::now().timestamp() as f64;
    for card in 1..=300 {
        match queue.score_of(CardId(card), T).await? {
            Some(score) if is_lease_score(score) => leased += 1,
            Some(score) if score <= now => due += 1,
            _ => {}
        }
    }
    assert_eq!(leased, 0, "no card taken and left waiting for the budget");
    assert_eq!(due, 300 - polls, "the rest wait, due, in the sorted set");
    Ok(())
}

// A backlog of 300 cards due for ten minutes and 10 cards whose poll is decisive, due for a
// second: under a budget of 10 polls every 100 ms the decisive cards go first, then the backlog
// in due order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_short_budget_decisive_cards_are_polled_before_an_older_backlog()
-> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    let now = chrono::Utc::now();
    let backlog: Vec<_> = (1..=300)
        .map(|i| (CardId(i), now - chrono::Duration::seconds(600)))
        .collect();
    queue.requeue_many(T, &backlog).await?;
    let decisive: Vec<CardId> = (1001..=1010).map(CardId).collect();
    for card in &decisive {
        queue.requeue(*card, T, now).await?;
        queue
            .reschedule_decisive(*card, T, now - chrono::Duration::seconds(1))
            .await?;
    }
    let tokens = Arc::new(Tokens::default());
    let (handler, sched) = spending(&queue, leases, &tokens);
    let stop = CancellationToken::new();
    let run = tokio::spawn(sched.run(stop.clone()));
    for _ in 0..3 {
        tokens.0.fetch_add(10, Ordering::SeqCst);
        let spent = wait_until(
            || tokens.0.load(Ordering::SeqCst) == 0,
            Duration::from_secs(5),
        )
        .await;
        assert!(spent, "the budget's polls ran");
    }
    stop.cancel();
    run.await?;

    let polled = handler.polled();
    let mut first: Vec<CardId> = polled.iter().take(10).copied().collect();
    first.sort();
    assert_eq!(first, decisive, "the decisive cards first: {polled:?}");
    assert!(
        polled[10..].iter().all(|c| c.get() <= 300),
        "then the backlog: {polled:?}"
    );
    assert_eq!(queue.decisive_len(T).await?, 0);
    Ok(())
}

/// Puts card 1 back due now on its first poll and keeps running a while (as a poll refused a
/// budget slot or a cluster slot does, a moment before it returns); reschedules an hour out
/// otherwise.
struct Bouncer {
    queue: PollingQueueManager,
    seen: Mutex<HashMap<CardId, usize>>,
}

#[async_trait::async_trait]
impl TaskHandler for Bouncer {
    fn task_type(&self) -> TaskType {
        T
    }

    async fn handle(&self, card: CardId) -> Outcome {
        let first = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            let n = seen.entry(card).or_default();
            *n += 1;
            *n == 1
        };
        let now = chrono::Utc::now();
        if card == CardId(1) && first {
            let _ = self.queue.reschedule(card, T, now).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            return Outcome::RequeuedFull;
        }
        let _ = self
            .queue
            .reschedule(card, T, now + chrono::Duration::hours(1))
            .await;
        Outcome::Success
    }
}

// Before: the loop dequeued card 1 again while its first poll still ran, found it in flight and
// dropped it, leaving it leased (invisible) until the lease ended, 300 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_put_back_due_now_while_its_poll_runs_is_polled_again() -> anyhow::Result<()> {
    let (_redis, queue, leases) = world().await?;
    seed_due(&queue, T, 3).await?;
    let handler = Arc::new(Bouncer {
        queue: queue.clone(),
        seen: Mutex::new(HashMap::new()),
    });
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
    let seen = || {
        handler
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&CardId(1))
            .copied()
    };
    let again = wait_until(|| seen() == Some(2), Duration::from_secs(10)).await;
    stop.cancel();
    run.await?;
    assert!(
        again,
        "card 1 polled again after its first poll returned: {:?}",
        seen()
    );
    let score = queue.score_of(CardId(1), T).await?.unwrap_or_default();
    assert!(
        !is_lease_score(score),
        "card 1 rescheduled, not left leased"
    );
    Ok(())
}
