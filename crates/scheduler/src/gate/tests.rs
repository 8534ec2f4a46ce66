//! The gates' waiting on paused time: how long the loop waits for the carrier budget and for
//! cluster-wide slots, and what it takes when they come free.

use super::{BUDGET_PAUSE, DispatchBudget, SlotRoom, budget_room, cluster_room};
use domain::TaskType;
use polling_queue::QueueError;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const T: TaskType = TaskType::Carddata;

/// Answers from a script, then `then` for ever; records when it was asked.
struct Scripted<A> {
    answers: Mutex<VecDeque<A>>,
    then: fn() -> A,
    asked: Mutex<Vec<Instant>>,
}

impl<A> Scripted<A> {
    fn new(answers: impl IntoIterator<Item = A>, then: fn() -> A) -> Self {
        Scripted {
            answers: Mutex::new(answers.into_iter().collect()),
            then,
            asked: Mutex::new(Vec::new()),
        }
    }

    fn next(&self) -> A {
        self.asked.lock().unwrap().push(Instant::now());
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(self.then)
    }

    /// When it was asked, in ms after `start`.
    fn asked_at(&self, start: Instant) -> Vec<u64> {
        let asked = self.asked.lock().unwrap();
        asked
            .iter()
            .map(|at| (*at - start).as_millis() as u64)
            .collect()
    }
}

#[async_trait::async_trait]
impl DispatchBudget for Scripted<Option<usize>> {
    async fn room(&self, _task: TaskType) -> Option<usize> {
        self.next()
    }
    fn dispatched(&self, _task: TaskType, _polls: usize) {}
}

#[async_trait::async_trait]
impl SlotRoom for Scripted<Result<u64, QueueError>> {
    async fn room(&self, _task: TaskType) -> Result<u64, QueueError> {
        self.next()
    }
}

#[tokio::test(start_paused = true)]
async fn the_budget_is_asked_again_every_pause_until_it_has_room() {
    let script = Arc::new(Scripted::new([Some(0), Some(0), Some(0), Some(5)], || {
        Some(0)
    }));
    let budget: Arc<dyn DispatchBudget> = script.clone();
    let start = Instant::now();
    let room = budget_room(&budget, T, 8, &CancellationToken::new()).await;
    assert_eq!(room, 5, "no more than the budget lets start");
    assert_eq!(script.asked_at(start), vec![0, 20, 40, 60]);
    assert_eq!(start.elapsed(), BUDGET_PAUSE * 3);
    // Room beyond the want, or no limit at all: the want, at once.
    for answer in [Some(100), None] {
        let budget: Arc<dyn DispatchBudget> = Arc::new(Scripted::new([answer], || Some(0)));
        let start = Instant::now();
        assert_eq!(
            budget_room(&budget, T, 8, &CancellationToken::new()).await,
            8
        );
        assert_eq!(start.elapsed(), Duration::ZERO);
    }
}

/// A budget that knows when its bucket frees (`free_in`): the loop sleeps that long, within
/// [`BUDGET_PAUSE`]..=[`BUDGET_PAUSE_MAX`], instead of asking every pause.
struct Booked {
    script: Scripted<Option<usize>>,
    free_in: Duration,
}

#[async_trait::async_trait]
impl DispatchBudget for Booked {
    async fn room(&self, _task: TaskType) -> Option<usize> {
        self.script.next()
    }
    fn dispatched(&self, _task: TaskType, _polls: usize) {}
    fn free_in(&self, _task: TaskType) -> Duration {
        self.free_in
    }
}

#[tokio::test(start_paused = true)]
async fn a_booked_up_budget_is_asked_again_when_its_next_slot_frees() {
    for (free_in, expected) in [
        (Duration::from_millis(700), vec![0, 700, 1400]),
        (Duration::from_secs(30), vec![0, 1000, 2000]),
        (Duration::from_millis(1), vec![0, 20, 40]),
    ] {
        let booked = Arc::new(Booked {
            script: Scripted::new([Some(0), Some(0), Some(3)], || Some(0)),
            free_in,
        });
        let budget: Arc<dyn DispatchBudget> = booked.clone();
        let start = Instant::now();
        assert_eq!(
            budget_room(&budget, T, 8, &CancellationToken::new()).await,
            3
        );
        assert_eq!(
            booked.script.asked_at(start),
            expected,
            "free in {free_in:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_budget_without_room_is_waited_for_until_shutdown() {
    let budget: Arc<dyn DispatchBudget> = Arc::new(Scripted::new([], || Some(0)));
    let stop = CancellationToken::new();
    let wait = tokio::spawn({
        let stop = stop.clone();
        async move { budget_room(&budget, T, 8, &stop).await }
    });
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!wait.is_finished(), "a budget without room is waited for");
    stop.cancel();
    assert_eq!(wait.await.unwrap(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_full_cluster_pool_is_asked_again_after_a_growing_pause() {
    let full = std::iter::repeat_with(|| Ok(0)).take(8);
    let slots = Scripted::new(full.chain([Ok(3)]), || Ok(0));
    let start = Instant::now();
    let room = cluster_room(
        &slots,
        T,
        64,
        (&Notify::new(), false),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(room, 3, "no more cards than free slots");
    // 10 ms doubling to 1 s: 10, 20, 40, 80, 160, 320, 640, 1000.
    assert_eq!(
        slots.asked_at(start),
        vec![0, 10, 30, 70, 150, 310, 630, 1270, 2270]
    );
}

#[tokio::test(start_paused = true)]
async fn a_poll_of_this_node_finishing_asks_again_at_once() {
    let slots = Arc::new(Scripted::new([Ok(0), Ok(0), Ok(0)], || Ok(2)));
    let finished = Arc::new(Notify::new());
    let start = Instant::now();
    let wait = tokio::spawn({
        let (slots, finished) = (slots.clone(), finished.clone());
        async move {
            cluster_room(
                slots.as_ref(),
                T,
                64,
                (&finished, false),
                &CancellationToken::new(),
            )
            .await
        }
    });
    // Asked at 0, 10 and 30 ms; the next pause would end at 70 ms.
    tokio::time::sleep(Duration::from_millis(45)).await;
    finished.notify_one();
    assert_eq!(wait.await.unwrap(), 2);
    assert_eq!(slots.asked_at(start), vec![0, 10, 30, 45]);
}

#[tokio::test(start_paused = true)]
async fn with_its_own_polls_running_a_node_waits_for_them_not_a_short_pause() {
    let slots = Scripted::new([Ok(0), Ok(0), Ok(1)], || Ok(1));
    let start = Instant::now();
    let room = cluster_room(
        &slots,
        T,
        64,
        (&Notify::new(), true),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(room, 1);
    // No poll of its own finished in this test: another node's slot, looked for every second.
    assert_eq!(slots.asked_at(start), vec![0, 1000, 2000]);
}

#[tokio::test(start_paused = true)]
async fn unreadable_slots_do_not_stop_dequeuing_and_shutdown_ends_the_wait() {
    let slots = Scripted::new([Ok(0), Err(QueueError::Batch("down".into()))], || Ok(0));
    let start = Instant::now();
    assert_eq!(
        cluster_room(
            &slots,
            T,
            64,
            (&Notify::new(), false),
            &CancellationToken::new()
        )
        .await,
        64
    );
    assert_eq!(start.elapsed(), Duration::from_millis(10));

    let slots = Arc::new(Scripted::new([], || Ok(0)));
    let stop = CancellationToken::new();
    let wait = tokio::spawn({
        let (slots, stop) = (slots.clone(), stop.clone());
        async move { cluster_room(slots.as_ref(), T, 64, (&Notify::new(), false), &stop).await }
    });
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!wait.is_finished(), "a full pool is waited for");
    stop.cancel();
    assert_eq!(wait.await.unwrap(), 0);
}
