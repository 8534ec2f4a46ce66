//! Cluster-wide concurrency limit per task type.
//!
//! `polling:concurrency:{type}` is a zset of holders (token -> lease expiry, unix seconds);
//! `polling:concurrency:max:{type}` holds the max, [`SemaphoreSettings::default_max`] applying
//! while it is absent. A holder that dies without releasing frees its slot when its lease ends.
//! "Now" comes from the injected [`Clock`]; nodes are expected to run NTP-synchronised clocks.
//!
//! The max is read from Redis at most once a second per process.

use crate::score::lease_ms;
use crate::{Keys, QueueError, RedisKey, scripts};
use domain::{Clock, TaskType};
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
    pool: Pool,
    keys: Keys,
    settings: SemaphoreSettings,
    local: Arc<[Local; 4]>,
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
        Self {
            pool,
            keys,
            settings,
            local: Arc::new(Default::default()),
        }
    }

    fn holders(&self, task: TaskType) -> String {
        self.keys.render(&RedisKey::Concurrency { task })
    }

    /// Free slots of `task` right now (`max` minus live holders; 0 when full). The scheduler
    /// dequeues no more cards than this, so a full cluster-wide pool is waited for instead of
    /// cycling cards through the queue.
    pub async fn room(&self, task: TaskType) -> Result<u64, QueueError> {
        let max = u64::from(self.cached_max(task).await?);
        Ok(max.saturating_sub(self.current(task).await?))
    }

    /// Takes a slot of `task`, or `None` when all `max` slots are held.
    pub async fn acquire(&self, task: TaskType) -> Result<Option<Permit>, QueueError> {
        let max = self.cached_max(task).await?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let args = vec![
            Value::from(lease_ms(self.settings.lease)),
            Value::from(i64::from(max)),
            Value::from(token.as_str()),
        ];
        let got: i64 = scripts::eval(
            &scripts::SEMAPHORE_ACQUIRE,
            &self.pool,
            self.holders(task),
            args,
        )
        .await?;
        Ok((got == 1).then_some(Permit { task, token }))
    }

    /// Gives the slot back. Releasing twice, or after the lease ended, is harmless.
    pub async fn release(&self, permit: Permit) -> Result<(), QueueError> {
        let _: i64 = self
            .pool
            .zrem(self.holders(permit.task), permit.token)
            .await?;
        Ok(())
    }

    /// Slots of `task` held right now (expired holders not counted).
    pub async fn current(&self, task: TaskType) -> Result<u64, QueueError> {
        // Holders whose expiry is <= now are gone (the acquire script drops them): the script
        // counts (now, inf] by the server's clock.
        let n: i64 = scripts::eval(
            &scripts::SEMAPHORE_COUNT,
            &self.pool,
            self.holders(task),
            vec![],
        )
        .await?;
        Ok(u64::try_from(n).unwrap_or(0))
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

    /// The max of `task`: the max key, or the configured default when absent.
    pub async fn max(&self, task: TaskType) -> Result<u32, QueueError> {
        let key = self.keys.render(&RedisKey::ConcurrencyMax { task });
        let raw: Option<String> = self.pool.get(key.as_str()).await?;
        match raw {
            None => Ok(self.settings.default_max[task.index()]),
            Some(s) => s.trim().parse().map_err(|e| QueueError::Corrupt {
                key,
                detail: format!("max `{s}` is not a count: {e}"),
            }),
        }
    }

    /// Sets the max of `task` for every node. Lowering it below the current holders refuses new
    /// acquirers until enough slots are released.
    pub async fn set_max(&self, task: TaskType, max: u32) -> Result<(), QueueError> {
        let key = self.keys.render(&RedisKey::ConcurrencyMax { task });
        let _: () = self
            .pool
            .set(key, i64::from(max), None, None, false)
            .await?;
        *self.local[task.index()]
            .max
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }

    /// Forgets every holder of `task` (e.g. after a crash left slots held). The max is kept.
    pub async fn reset(&self, task: TaskType) -> Result<(), QueueError> {
        let _: i64 = self.pool.del(self.holders(task)).await?;
        Ok(())
    }
}
