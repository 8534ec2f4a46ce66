//! Cluster-wide concurrency limit per task type.
//!
//! `polling:concurrency:{type}` is a zset of holders (token -> lease expiry, unix seconds);
//! `polling:concurrency:max:{type}` holds the max, [`SemaphoreSettings::default_max`] applying
//! while it is absent. A holder that dies without releasing frees its slot when its lease ends.
//! "Now" is the Redis server's clock (`TIME` in the scripts), so a node whose clock runs ahead
//! cannot expire the holders of the others.
//!
//! The max is read from Redis at most once a second per process. Concurrent acquirers of a
//! node share one script call per task type, concurrent releases one `ZREM` (see `batch`).

use crate::queue::score::lease_ms;
use crate::{Keys, QueueError, RedisKey, scripts};
use batch::Batcher;
use domain::{Cause, Clock, TaskType};
use fred::prelude::*;
use fred::types::Value;
use std::sync::Mutex;
use std::time::Instant;
use std::{sync::Arc, time::Duration};

/// How long a read of `polling:concurrency:max:{type}` is used before it is read again.
const MAX_TTL: Duration = Duration::from_secs(1);

/// Per process and task type: the last max read.
#[derive(Debug, Default)]
struct Local {
    max: Mutex<Option<(Instant, u32)>>,
}

/// Defaults of the semaphore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SemaphoreSettings {
    /// Max holders per task type (indexed by [`TaskType::index`]) while no max key is set.
    pub default_max: [u32; 4],
    /// How long a permit holds its slot if never released; longer than any task may run.
    pub lease: Duration,
}

impl SemaphoreSettings {
    /// The same default max for every task type.
    pub fn uniform(default_max: u32, lease: Duration) -> Self {
        Self {
            default_max: [default_max; 4],
            lease,
        }
    }
}

impl Default for SemaphoreSettings {
    fn default() -> Self {
        Self::uniform(100, Duration::from_secs(300))
    }
}

/// A held slot. Give it back with [`ConcurrencySemaphore::release`]; dropping it without
/// releasing keeps the slot until the lease ends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a permit holds a slot until released or until its lease ends"]
pub struct Permit {
    pub task: TaskType,
    /// Unique member of the holders zset.
    pub token: String,
}

/// The concurrency semaphore of every task type.
#[derive(Debug, Clone)]
pub struct ConcurrencySemaphore {
    holders: Arc<Holders>,
    /// Group commit of acquires: the tokens of concurrent acquirers of one type go to one
    /// script call, which grants as many as there is room for, in order.
    acquirer: Batcher<(TaskType, String), Result<bool, Cause>>,
    /// Group commit of releases: one `ZREM` of many tokens per type.
    releaser: Batcher<(TaskType, String), Result<(), Cause>>,
}

/// The most tokens one acquire script or one release takes (the script unpacks two values a
/// token; Lua's `unpack` fails at about 8,000).
const TOKEN_BATCH: usize = 2_000;

/// The keys, the settings and the cached max: what the flushes and the reads share.
#[derive(Debug)]
struct Holders {
    pool: Pool,
    keys: Keys,
    settings: SemaphoreSettings,
    local: [Local; 4],
}

impl ConcurrencySemaphore {
    /// `_clock` is no longer read (every decision takes the Redis server's time); the parameter
    /// stays so that the API and the benchmarks build unchanged.
    pub fn new(
        pool: Pool,
        keys: Keys,
        settings: SemaphoreSettings,
        _clock: Arc<dyn Clock>,
    ) -> Self {
        let holders = Arc::new(Holders {
            pool,
            keys,
            settings,
            local: Default::default(),
        });
        let granting = holders.clone();
        let acquirer = Batcher::new(
            "semaphore acquire",
            TOKEN_BATCH,
            move |tokens: Vec<(TaskType, String)>| {
                let holders = granting.clone();
                async move { holders.grant(tokens).await }
            },
        );
        let releasing = holders.clone();
        let releaser = Batcher::new(
            "semaphore release",
            TOKEN_BATCH,
            move |tokens: Vec<(TaskType, String)>| {
                let holders = releasing.clone();
                async move {
                    let n = tokens.len();
                    match holders.release_all(tokens).await {
                        Ok(()) => vec![Ok(()); n],
                        Err(error) => vec![Err(Cause::new(error)); n],
                    }
                }
            },
        );
        Self {
            holders,
            acquirer,
            releaser,
        }
    }

    /// Free slots of `task` right now (`max` minus live holders; 0 when full). The scheduler
    /// dequeues no more cards than this, so a full cluster-wide pool is waited for instead of
    /// cycling cards through the queue.
    pub async fn room(&self, task: TaskType) -> Result<u64, QueueError> {
        let max = u64::from(self.holders.cached_max(task).await?);
        Ok(max.saturating_sub(self.current(task).await?))
    }

    /// Takes a slot of `task`, or `None` when all `max` slots are held. Concurrent acquirers
    /// share one script call per type (served in arrival order).
    pub async fn acquire(&self, task: TaskType) -> Result<Option<Permit>, QueueError> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let granted = self
            .acquirer
            .submit((task, token.clone()))
            .await
            .map_err(|closed| QueueError::Batch(Cause::new(closed)))?
            .map_err(QueueError::Batch)?;
        Ok(granted.then_some(Permit { task, token }))
    }

    /// Gives the slot back. Releasing twice, or after the lease ended, is harmless. Concurrent
    /// releases share one `ZREM` per type.
    pub async fn release(&self, permit: Permit) -> Result<(), QueueError> {
        self.releaser
            .submit((permit.task, permit.token))
            .await
            .map_err(|closed| QueueError::Batch(Cause::new(closed)))?
            .map_err(QueueError::Batch)
    }

    /// Slots of `task` held right now (expired holders not counted).
    pub async fn current(&self, task: TaskType) -> Result<u64, QueueError> {
        // Holders whose expiry is <= now are gone (the acquire script drops them): the script
        // counts (now, inf] by the server's clock.
        let n: i64 = scripts::eval(
            &scripts::SEMAPHORE_COUNT,
            &self.holders.pool,
            self.holders.key(task),
            vec![],
        )
        .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The max of `task`: the max key, or the configured default when absent.
    pub async fn max(&self, task: TaskType) -> Result<u32, QueueError> {
        self.holders.max(task).await
    }

    /// Sets the max of `task` for every node. Lowering it below the current holders refuses new
    /// acquirers until enough slots are released.
    pub async fn set_max(&self, task: TaskType, max: u32) -> Result<(), QueueError> {
        let key = self.holders.keys.render(&RedisKey::ConcurrencyMax { task });
        let _: () = self
            .holders
            .pool
            .set(key, i64::from(max), None, None, false)
            .await?;
        *self.holders.local[task.index()]
            .max
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }

    /// Forgets every holder of `task` (e.g. after a crash left slots held). The max is kept.
    pub async fn reset(&self, task: TaskType) -> Result<(), QueueError> {
        let _: i64 = self.holders.pool.del(self.holders.key(task)).await?;
        Ok(())
    }
}

impl Holders {
    fn key(&self, task: TaskType) -> String {
        self.keys.render(&RedisKey::Concurrency { task })
    }

    /// One script call per task type for the tokens of a batch; answers, per token, whether
    /// it holds a slot.
    async fn grant(&self, tokens: Vec<(TaskType, String)>) -> Vec<Result<bool, Cause>> {
        let mut answers: Vec<Result<bool, Cause>> = vec![Ok(false); tokens.len()];
        for task in TaskType::ALL {
            let (positions, wanted): (Vec<usize>, Vec<&str>) = tokens
                .iter()
                .enumerate()
                .filter(|(_, (t, _))| *t == task)
                .map(|(i, (_, token))| (i, token.as_str()))
                .unzip();
            if wanted.is_empty() {
                continue;
            }
            match self.acquire_tokens(task, &wanted).await {
                Ok(granted) => {
                    for (served, position) in positions.into_iter().enumerate() {
                        answers[position] = Ok(served < granted);
                    }
                }
                Err(error) => {
                    let cause = Cause::new(error);
                    for position in positions {
                        answers[position] = Err(cause.clone());
                    }
                }
            }
        }
        answers
    }

    /// Runs the acquire script for `tokens` of `task`: how many, from the first, got a slot.
    async fn acquire_tokens(&self, task: TaskType, tokens: &[&str]) -> Result<usize, QueueError> {
        let max = self.cached_max(task).await?;
        let mut args = Vec::with_capacity(2 + tokens.len());
        args.push(Value::from(lease_ms(self.settings.lease)));
        args.push(Value::from(i64::from(max)));
        args.extend(tokens.iter().map(|token| Value::from(*token)));
        let granted: i64 = scripts::eval(
            &scripts::SEMAPHORE_ACQUIRE,
            &self.pool,
            self.key(task),
            args,
        )
        .await?;
        Ok(usize::try_from(granted).unwrap_or(0))
    }

    /// One `ZREM` per task type for the tokens of a batch, pipelined.
    async fn release_all(&self, tokens: Vec<(TaskType, String)>) -> Result<(), QueueError> {
        let pipe = self.pool.next().pipeline();
        for task in TaskType::ALL {
            let members: Vec<String> = tokens
                .iter()
                .filter(|(t, _)| *t == task)
                .map(|(_, token)| token.clone())
                .collect();
            if !members.is_empty() {
                let _: () = pipe.zrem(self.key(task), members).await?;
            }
        }
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }

    /// [`max`](Self::max), read from Redis at most once a second per process: a change of the
    /// max reaches every node within a second.
    async fn cached_max(&self, task: TaskType) -> Result<u32, QueueError> {
        let slot = &self.local[task.index()].max;
        let fresh = *slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((read_at, max)) = fresh
            && read_at.elapsed() < MAX_TTL
        {
            return Ok(max);
        }
        let max = self.max(task).await?;
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), max));
        Ok(max)
    }

    async fn max(&self, task: TaskType) -> Result<u32, QueueError> {
        let key = self.keys.render(&RedisKey::ConcurrencyMax { task });
        let raw: Option<String> = self.pool.get(key.as_str()).await?;
        match raw {
            None => Ok(self.settings.default_max[task.index()]),
            Some(s) => s.trim().parse().map_err(|e| QueueError::Corrupt {
                key,
                detail: format!("max `{s}` is not a count: {e}"),
                source: Some(Cause::new(e)),
            }),
        }
    }
}
