//! [`CardInitializer`]: fills the sharded queues from the whole fleet (`docs/rules.md`,
//! "Initializer").
//!
//! A reader task streams keyset pages of polling-enabled cards (one page ahead of the writers);
//! each page is matched against one config snapshot and bucketed by shard and type into
//! variadic `ZADD NX` commands; one page's commands go out at a time while the next page is
//! read and matched. Progress is recorded after each page is written.

mod progress;
mod watchdog;
mod writer;

pub use progress::{InitProgress, InitStatus};
pub use watchdog::{InitWatchdog, WATCH_EVERY};
pub use writer::first_score;

use crate::LifecycleError;
use domain::store::CardStore;
use domain::{CardId, CardMatchFields, Clock};
use polling_config::PollingConfigManager;
use polling_queue::{FirstEntries, InitWriter, Keys, LeaseToken, Pool, SingletonLease};
use progress::Totals;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use writer::Batcher;

/// The lease job name.
const JOB: &str = "initializer";

/// Most pages matched while a write runs that go out together in the next write.
const PAGES_PER_WRITE: usize = 4;

/// Tuning of a run. The defaults suit 10M cards on a small machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitSettings {
    /// Must equal the queue manager's: a card lives on shard `card_id % shard_count`.
    pub shard_count: u32,
    /// Cards per keyset page (`docs/rules.md`, "Initializer": 100,000).
    pub page_size: u32,
    /// Score/member pairs per ZADD command.
    pub members_per_command: usize,
    /// ZADD commands per pipeline.
    pub commands_per_pipeline: usize,
    /// Pipelines in flight at once (spread over the pool's connections).
    pub writers: usize,
    /// TTL of the singleton lease; renewed every third of it while running.
    pub lease_ttl: Duration,
}

impl Default for InitSettings {
    fn default() -> Self {
        Self {
            shard_count: 16,
            page_size: 100_000,
            members_per_command: 1_000,
            commands_per_pipeline: 50,
            writers: 4,
            lease_ttl: Duration::from_secs(30),
        }
    }
}

/// `Initial` refuses to run again after a completed run; `Repair` re-runs over a live system
/// (ZADD NX never moves an existing score either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitMode {
    Initial,
    Repair,
}

/// The figures of a finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitReport {
    pub processed: u64,
    pub unmatched: u64,
    /// Queue entries that were not there before.
    pub added: u64,
    pub shards: Vec<u64>,
    pub elapsed: Duration,
}

/// Writes every polling-enabled, matched card into each queue its config schedules.
#[derive(Clone)]
pub struct CardInitializer {
    cards: Arc<dyn CardStore>,
    configs: PollingConfigManager,
    /// The initializer's writes of `polling:*` keys (shard queues, progress).
    writer: InitWriter,
    lease: SingletonLease,
    clock: Arc<dyn Clock>,
    settings: InitSettings,
}

impl std::fmt::Debug for CardInitializer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardInitializer")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl CardInitializer {
    pub fn new(
        cards: Arc<dyn CardStore>,
        configs: PollingConfigManager,
        pool: Pool,
        keys: Keys,
        clock: Arc<dyn Clock>,
        mut settings: InitSettings,
    ) -> Self {
        settings.shard_count = settings.shard_count.max(1);
        settings.page_size = settings.page_size.max(1);
        let lease = SingletonLease::new(pool.clone(), keys.clone());
        let writer = InitWriter::new(pool, &keys, settings.shard_count);
        Self {
            cards,
            configs,
            writer,
            lease,
            clock,
            settings,
        }
    }

    /// The progress hash, if a run ever started.
    pub async fn progress(&self) -> Result<Option<InitProgress>, LifecycleError> {
        progress::read(&self.writer).await
    }

    /// Whether no run has completed yet (`cmp-worker run` calls this at start).
    pub async fn needs_run(&self) -> Result<bool, LifecycleError> {
        Ok(self
            .progress()
            .await?
            .is_none_or(|p| p.status != Some(InitStatus::Completed)))
    }

    /// Runs once under the singleton lease. Refuses when another node runs it, when the
    /// recorded shard count differs, or (`Initial`) when a run already completed.
    pub async fn run(&self, mode: InitMode) -> Result<InitReport, LifecycleError> {
        let Some(lease) = self.lease.try_acquire(JOB, self.settings.lease_ttl).await? else {
            return Err(LifecycleError::LeaseHeld {
                job: JOB.to_owned(),
            });
        };
        let result = tokio::select! {
            r = self.run_locked(mode) => r,
            e = self.keep_lease(&lease) => Err(e),
        };
        if let Err(error) = &result
            && !matches!(
                error,
                LifecycleError::ShardCountMismatch { .. } | LifecycleError::AlreadyCompleted
            )
        {
            tracing::error!(%error, "card initializer failed");
            let msg = error.to_string();
            if let Err(e) = progress::finish(&self.writer, None, Some(&msg), self.clock.now()).await
            {
                tracing::warn!(error = %e, "could not record the initializer failure");
            }
        }
        if let Err(error) = self.lease.release(lease).await {
            tracing::warn!(%error, "could not release the initializer lease");
        }
        result
    }

    async fn keep_lease(&self, lease: &LeaseToken) -> LifecycleError {
        let mut tick = tokio::time::interval(self.settings.lease_ttl / 3);
        tick.tick().await;
        loop {
            tick.tick().await;
            match self.lease.renew(lease).await {
                Ok(true) => {}
                Ok(false) => {
                    return LifecycleError::LeaseLost {
                        job: JOB.to_owned(),
                    };
                }
                Err(error) => tracing::warn!(%error, "initializer lease renewal failed; retrying"),
            }
        }
    }

    async fn run_locked(&self, mode: InitMode) -> Result<InitReport, LifecycleError> {
        let s = self.settings;
        if let Some(p) = progress::read(&self.writer).await? {
            match p.shard_count {
                Some(recorded) if recorded != s.shard_count => {
                    return Err(LifecycleError::ShardCountMismatch {
                        recorded,
                        configured: s.shard_count,
                    });
                }
                _ if mode == InitMode::Initial && p.status == Some(InitStatus::Completed) => {
                    return Err(LifecycleError::AlreadyCompleted);
                }
                _ => {}
            }
        }
        let started = std::time::Instant::now();
        let mode_name = if mode == InitMode::Repair {
            "repair"
        } else {
            "initial"
        };
        progress::start(&self.writer, s.shard_count, mode_name, self.clock.now()).await?;
        // The sets own every task of the run: dropping the run (abort) stops them all.
        let (mut reader, mut writes) = (JoinSet::new(), JoinSet::new());
        let (tx, mut pages) = mpsc::channel(1);
        reader.spawn(read_pages(self.cards.clone(), s.page_size, tx));
        let total = self.cards.count_polling_enabled().await?;
        progress::set_total(&self.writer, total).await?;
        tracing::info!(
            total,
            mode = mode_name,
            shards = s.shard_count,
            "card initializer started"
        );

        let batcher = Batcher::new(self.writer.clone(), s.shard_count, s.members_per_command);
        let mut totals = Totals::new(s.shard_count);
        // One page is written at a time, the next one read and matched meanwhile, so Redis
        // gets one stream of commands queue by queue. Two pages written at once interleave two
        // pages' queues on two connections: Redis spent ~1.5x the CPU per entry on that
        // (`just bench`, initializer at 2M cards: 22.9 s vs 17.5-20.0 s, `redis-cli --pipe`
        // of the same members 14.8-15.3 s).
        // Pages matched while a write runs, merged into the next write (at most
        // PAGES_PER_WRITE): with a write slower than a read, Redis gets longer runs of each
        // queue (`just bench`, 2M cards, entries in score order: 100,000-card writes 9.9 s,
        // up to 400,000-card writes 8.1 s; `redis-cli --pipe` 7.2-7.6 s).
        let mut matched: Option<(FirstEntries, writer::PageCounts, usize)> = None;
        let mut exhausted = false;
        // Since when no page is being written: the writer waited that long for the reader.
        let mut idle_since = std::time::Instant::now();
        loop {
            if writes.is_empty()
                && let Some((commands, counts, _)) = matched.take()
            {
                let waited = idle_since.elapsed();
                let write = writer::write(
                    self.writer.clone(),
                    commands,
                    s.commands_per_pipeline,
                    s.writers,
                );
                writes.spawn(async move {
                    let started = std::time::Instant::now();
                    let written = write.await;
                    tracing::debug!(
                        waited_ms = waited.as_millis() as u64,
                        write_ms = started.elapsed().as_millis() as u64,
                        "initializer page written"
                    );
                    written.map(|added| (counts, added))
                });
            }
            if exhausted && matched.is_none() && writes.is_empty() {
                break;
            }
            tokio::select! {
                // A finished page is recorded at once.
                Some(joined) = writes.join_next(), if !writes.is_empty() => {
                    idle_since = std::time::Instant::now();
                    self.record(joined, &mut totals).await?;
                }
                page = pages.recv(), if !exhausted && matched.as_ref().is_none_or(|m| m.2 < PAGES_PER_WRITE) => {
                    match page {
                        None => exhausted = true,
                        Some(page) => {
                            let page = page?;
                            let (snapshot, now) = (self.configs.snapshot(), self.clock.now().timestamp());
                            let (entries, counts) = batcher.page(&page, &snapshot, now);
                            matched = Some(match matched.take() {
                                None => (entries, counts, 1),
                                Some((mut all, mut sum, pages)) => {
                                    all.append(entries);
                                    sum.merge(&counts);
                                    (all, sum, pages + 1)
                                }
                            });
                        }
                    }
                }
            }
        }
        while let Some(joined) = writes.join_next().await {
            self.record(joined, &mut totals).await?;
        }
        // Completed implies the canaries are there: the watchdog reads a canary gone under a
        // completed run as a node that lost its data.
        self.writer
            .write_canaries(&self.clock.now().to_rfc3339())
            .await?;
        progress::finish(&self.writer, Some(&totals), None, self.clock.now()).await?;
        tracing::info!(
            processed = totals.processed,
            unmatched = totals.unmatched,
            added = totals.added,
            "card initializer completed"
        );
        Ok(InitReport {
            processed: totals.processed,
            unmatched: totals.unmatched,
            added: totals.added,
            shards: totals.shards,
            elapsed: started.elapsed(),
        })
    }

    /// Adds a written page to the totals and records them in the progress hash.
    async fn record(
        &self,
        joined: Result<PageResult, tokio::task::JoinError>,
        totals: &mut Totals,
    ) -> Result<(), LifecycleError> {
        let (counts, added) = joined.map_err(LifecycleError::Task)??;
        totals.add(&counts, added);
        progress::page_done(&self.writer, totals).await
    }
}

type PageResult = Result<(writer::PageCounts, u64), LifecycleError>;

/// Streams keyset pages into `tx` until the fleet is exhausted (or the receiver is gone).
async fn read_pages(
    cards: Arc<dyn CardStore>,
    page_size: u32,
    tx: mpsc::Sender<Result<Vec<CardMatchFields>, LifecycleError>>,
) {
    let mut after: Option<CardId> = None;
    loop {
        let page = cards.page_polling_enabled(after, page_size).await;
        let (last, full) = match &page {
            Ok(p) => (p.last().map(|c| c.id), p.len() == page_size as usize),
            Err(_) => (None, false),
        };
        if page.as_ref().is_ok_and(Vec::is_empty)
            || tx.send(page.map_err(Into::into)).await.is_err()
            || !full
        {
            return;
        }
        after = last;
    }
}
