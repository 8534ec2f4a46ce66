//! Group commit for async callers.
//!
//! Hundreds of handler tasks each write one card's facts, reschedule one card or count one
//! run. Sent one by one, each costs a PostgreSQL commit or a Redis round trip. A [`Batcher`]
//! lets every caller keep its one-item call (`submit(item).await` answers that item's result)
//! while one background task turns whatever has queued up into one flush: items arriving
//! while a flush runs form the next batch. Under load, batches grow by themselves up to
//! `max_batch`; when idle, an item is flushed at once (no timer, no added latency).
//!
//! A flush much faster than the callers' arrival gaps keeps batches small: each of a stream of
//! callers would get a flush of its own. [`Batcher::linger`] trades a bounded wait for larger
//! batches, and only under load: an item arriving within the linger after the previous flush
//! ended waits up to the linger for company; an item after a quiet spell is flushed at once.
//!
//! Owns no I/O and no policy: the flush function decides what a batch means (one transaction,
//! one pipeline) and answers one result per item, in order. A flush that fails answers an error
//! for each of its items; the caller decides what that means (a poll is rescheduled at the
//! retry interval).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

type Flush<I, O> =
    Arc<dyn Fn(Vec<I>) -> Pin<Box<dyn Future<Output = Vec<O>> + Send>> + Send + Sync>;

/// Why [`Batcher::submit`] has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchError {
    /// The flush task is gone: the runtime it ran on shut down, or its flush panicked.
    Closed,
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the batch writer is closed")
    }
}

impl std::error::Error for BatchError {}

/// The receiving end, held until the flush task starts.
type Pending<I, O> = Arc<Mutex<Option<mpsc::UnboundedReceiver<Job<I, O>>>>>;

/// How long one flush may take before its callers are answered `Closed` and the next batch
/// goes: longer than any healthy PostgreSQL transaction or Redis pipeline of a batch.
const FLUSH_DEADLINE: Duration = Duration::from_secs(15);

struct Job<I, O> {
    item: I,
    reply: oneshot::Sender<O>,
}

/// Collects items from many tasks into batches for one flush function. Cheap to clone; the
/// background task ends when the last clone is dropped.
pub struct Batcher<I, O> {
    name: &'static str,
    tx: mpsc::UnboundedSender<Job<I, O>>,
    /// The receiving end until the flush task is started, on the first submit (so a batcher
    /// can be built outside a runtime; the task runs on the runtime of its first caller).
    rx: Pending<I, O>,
    flush: Flush<I, O>,
    max_batch: usize,
    linger: Duration,
}

impl<I, O> Clone for Batcher<I, O> {
    fn clone(&self) -> Self {
        Self {
            name: self.name,
            tx: self.tx.clone(),
            rx: self.rx.clone(),
            flush: self.flush.clone(),
            max_batch: self.max_batch,
            linger: self.linger,
        }
    }
}

impl<I, O> std::fmt::Debug for Batcher<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("name", &self.name)
            .field("max_batch", &self.max_batch)
            .field("linger", &self.linger)
            .finish_non_exhaustive()
    }
}

impl<I: Send + 'static, O: Send + 'static> Batcher<I, O> {
    /// A batcher named `name` (in logs) whose flushes take at most `max_batch` items (at least
    /// one). `flush` must answer exactly one output per input, in input order.
    pub fn new<F, Fut>(name: &'static str, max_batch: usize, flush: F) -> Self
    where
        F: Fn(Vec<I>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<O>> + Send + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            name,
            tx,
            rx: Arc::new(Mutex::new(Some(rx))),
            flush: Arc::new(move |items| Box::pin(flush(items))),
            max_batch: max_batch.max(1),
            linger: Duration::ZERO,
        }
    }

    /// Under load (an item arriving less than `linger` after the previous flush ended), a
    /// batch waits up to `linger` after its first item for more, unless it is full before.
    /// After a quiet spell an item is still flushed at once. Set before the first submit.
    #[must_use]
    pub fn linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    /// Queues `item` for the next flush and waits for its result. Dropping the future does
    /// not withdraw the item: it is flushed with its batch anyway, its answer discarded.
    pub async fn submit(&self, item: I) -> Result<O, BatchError> {
        self.start();
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Job { item, reply })
            .map_err(|_| BatchError::Closed)?;
        answer.await.map_err(|_| BatchError::Closed)
    }

    /// Starts the flush task once, on the caller's runtime.
    fn start(&self) {
        let taken = self.rx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(rx) = taken {
            tokio::spawn(run(
                self.name,
                rx,
                self.flush.clone(),
                self.max_batch,
                self.linger,
            ));
        }
    }
}

async fn run<I: Send + 'static, O: Send + 'static>(
    name: &'static str,
    mut rx: mpsc::UnboundedReceiver<Job<I, O>>,
    flush: Flush<I, O>,
    max_batch: usize,
    linger: Duration,
) {
    let mut jobs: Vec<Job<I, O>> = Vec::with_capacity(max_batch);
    let mut last_flush_end: Option<Instant> = None;
    while rx.recv_many(&mut jobs, max_batch).await > 0 {
        if last_flush_end.is_some_and(|ended| ended.elapsed() < linger) {
            gather(&mut rx, &mut jobs, max_batch, Instant::now() + linger).await;
        }
        let (items, replies): (Vec<I>, Vec<oneshot::Sender<O>>) =
            jobs.drain(..).map(|job| (job.item, job.reply)).unzip();
        let n = items.len();
        // The flush runs in its own task so that a panic in it answers Closed to its callers
        // instead of ending every later flush, and under a deadline so that a flush stuck on a
        // dead connection (a Redis failover) does not hold every later caller.
        let mut task = tokio::spawn((flush)(items));
        let flushed = tokio::time::timeout(FLUSH_DEADLINE, &mut task).await;
        last_flush_end = Some(Instant::now());
        let flushed = match flushed {
            Ok(joined) => joined,
            Err(_) => {
                task.abort();
                tracing::error!(
                    batcher = name,
                    items = n,
                    "a flush outlived its deadline; its callers get no answer"
                );
                continue;
            }
        };
        match flushed {
            Ok(outputs) => {
                debug_assert_eq!(outputs.len(), n, "{name}: one output per item");
                if outputs.len() != n {
                    tracing::error!(
                        batcher = name,
                        items = n,
                        outputs = outputs.len(),
                        "a flush answered a different number of results than items; its callers get no answer"
                    );
                    continue;
                }
                for (reply, output) in replies.into_iter().zip(outputs) {
                    let _ = reply.send(output);
                }
            }
            Err(error) => {
                tracing::error!(batcher = name, items = n, %error, "a flush failed to run; its callers get no answer");
            }
        }
    }
}

/// Adds what arrives until `deadline` to `jobs`, up to `max_batch` in all.
async fn gather<I, O>(
    rx: &mut mpsc::UnboundedReceiver<Job<I, O>>,
    jobs: &mut Vec<Job<I, O>>,
    max_batch: usize,
    deadline: Instant,
) {
    while jobs.len() < max_batch {
        let room = max_batch - jobs.len();
        match tokio::time::timeout_at(deadline, rx.recv_many(jobs, room)).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn an_idle_item_is_flushed_at_once_alone() {
        let batcher = Batcher::new("double", 10, |items: Vec<u32>| async move {
            items.into_iter().map(|i| i * 2).collect::<Vec<_>>()
        });
        assert_eq!(batcher.submit(21).await, Ok(42));
    }

    #[tokio::test]
    async fn items_arriving_during_a_flush_form_the_next_batch_up_to_the_max() {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let seen = sizes.clone();
        let batcher = Batcher::new("slow", 40, move |items: Vec<u32>| {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(items.len());
                tokio::time::sleep(Duration::from_millis(20)).await;
                items
            }
        });
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..100u32 {
            let b = batcher.clone();
            tasks.spawn(async move { (i, b.submit(i).await) });
        }
        while let Some(joined) = tasks.join_next().await {
            let (i, answer) = joined.unwrap_or_else(|e| panic!("task: {e}"));
            assert_eq!(answer, Ok(i), "each caller gets its own item's answer");
        }
        let sizes = sizes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(sizes.iter().sum::<usize>(), 100);
        assert!(sizes.iter().all(|&n| n <= 40), "{sizes:?}");
        assert!(sizes.len() < 100, "batched: {sizes:?}");
    }

    #[tokio::test]
    async fn a_panicking_flush_answers_closed_and_the_next_batch_still_runs() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let batcher = Batcher::new("flaky", 1, move |items: Vec<u32>| {
            let first = counted.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                assert!(!first, "the first flush fails");
                items
            }
        });
        assert_eq!(batcher.submit(1).await, Err(BatchError::Closed));
        assert_eq!(batcher.submit(2).await, Ok(2));
    }

    /// A batcher lingering 5 ms that records its batch sizes.
    fn lingering() -> (Batcher<u32, u32>, Arc<Mutex<Vec<usize>>>) {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let seen = sizes.clone();
        let batcher = Batcher::new("lingering", 100, move |items: Vec<u32>| {
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(items.len());
            async move { items }
        })
        .linger(Duration::from_millis(5));
        (batcher, sizes)
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_quiet_spell_a_lingering_batcher_flushes_at_once() {
        let (batcher, sizes) = lingering();
        let started = Instant::now();
        assert_eq!(batcher.submit(1).await, Ok(1));
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "the first item waits for nobody"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        assert_eq!(batcher.submit(2).await, Ok(2));
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "nor one after a quiet spell"
        );
        assert_eq!(*sizes.lock().unwrap_or_else(|p| p.into_inner()), vec![1, 1]);
    }

    #[tokio::test(start_paused = true)]
    async fn under_load_a_lingering_batcher_gathers_a_stream_of_callers() {
        let (batcher, sizes) = lingering();
        assert_eq!(batcher.submit(0).await, Ok(0));
        // A caller a millisecond, starting right after that flush: the next flush waits up to
        // 5 ms after its first item, so it takes that caller and the four after it.
        let mut tasks = tokio::task::JoinSet::new();
        for i in 1..=10u32 {
            let b = batcher.clone();
            tasks.spawn(async move {
                tokio::time::sleep(Duration::from_millis(u64::from(i - 1))).await;
                (i, b.submit(i).await)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            let (i, answer) = joined.unwrap_or_else(|e| panic!("task: {e}"));
            assert_eq!(answer, Ok(i));
        }
        let sizes = sizes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(sizes.iter().sum::<usize>(), 11);
        assert_eq!(sizes[0], 1, "{sizes:?}");
        assert!(
            sizes.len() <= 4,
            "callers a millisecond apart share flushes: {sizes:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_batch_does_not_wait_out_the_linger() {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let seen = sizes.clone();
        let batcher = Batcher::new("small", 3, move |items: Vec<u32>| {
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(items.len());
            async move { items }
        })
        .linger(Duration::from_secs(60));
        assert_eq!(batcher.submit(0).await, Ok(0));
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 1..=3u32 {
            let b = batcher.clone();
            tasks.spawn(async move { b.submit(i).await });
        }
        while let Some(joined) = tasks.join_next().await {
            assert!(joined.is_ok_and(|answer| answer.is_ok()));
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "full: flushed before the linger ended"
        );
        assert_eq!(*sizes.lock().unwrap_or_else(|p| p.into_inner()), vec![1, 3]);
    }

    #[test]
    fn built_outside_a_runtime_it_runs_on_its_first_caller() {
        let batcher = Batcher::new("late", 4, |items: Vec<u8>| async move { items });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        assert_eq!(rt.block_on(batcher.submit(7)), Ok(7));
    }
}
