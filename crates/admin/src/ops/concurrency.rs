//! Concurrency admin (`/polling-concurrency`): current holders and max per task type of the
//! cluster-wide semaphore. A new max is one Redis `SET`; every node's next acquire reads it, so
//! it applies cluster-wide at once (well within the contract's second).

use crate::{AdminError, FieldError};
use domain::TaskType;
use polling_queue::ConcurrencySemaphore;
use serde::{Deserialize, Serialize};

/// How many worker nodes' handler pools the semaphore admits per type while no operator has
/// set a max: both binaries derive the default from `CMP_WORKER_POOL_*` with
/// [`default_max`], so the API shows exactly what the workers enforce.
pub const DEFAULT_NODES_PER_SEMAPHORE: u32 = 8;

/// The largest max an operator may set.
pub const MAX_CONCURRENCY: u32 = 100_000;

/// The semaphore's default max per task type (indexed by [`TaskType::index`]) from the handler
/// pool sizes `[realname, carddata, package, protect]` (`CMP_WORKER_POOL_*`).
pub fn default_max(pools: [usize; 4]) -> [u32; 4] {
    pools.map(|n| {
        u32::try_from(n)
            .unwrap_or(u32::MAX)
            .saturating_mul(DEFAULT_NODES_PER_SEMAPHORE)
    })
}

/// One task type's semaphore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConcurrencyView {
    pub task_type: TaskType,
    /// Slots held right now (expired holders not counted).
    pub current: u64,
    pub max: u32,
    /// The max while none is set (from `CMP_WORKER_POOL_*`).
    pub default_max: u32,
}

/// `PUT /polling-concurrency/{task_type}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetConcurrency {
    pub max: i64,
}

/// `POST /polling-concurrency/reset`: which types (all when absent) and whether to also drop
/// the operator's max (back to the default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResetConcurrency {
    #[serde(default)]
    pub task_types: Option<Vec<TaskType>>,
    #[serde(default)]
    pub clear_max: bool,
}

/// The concurrency admin.
#[derive(Debug, Clone)]
pub struct ConcurrencyService {
    semaphore: ConcurrencySemaphore,
    default_max: [u32; 4],
}

impl ConcurrencyService {
    /// `default_max` must be what the semaphore was built with ([`default_max`]).
    pub fn new(semaphore: ConcurrencySemaphore, default_max: [u32; 4]) -> Self {
        Self {
            semaphore,
            default_max,
        }
    }

    pub async fn list(&self) -> Result<Vec<ConcurrencyView>, AdminError> {
        let mut out = Vec::new();
        for task in TaskType::ALL {
            out.push(self.get(task).await?);
        }
        Ok(out)
    }

    pub async fn get(&self, task: TaskType) -> Result<ConcurrencyView, AdminError> {
        let (current, max) = tokio::join!(self.semaphore.current(task), self.semaphore.max(task));
        Ok(ConcurrencyView {
            task_type: task,
            current: current.map_err(AdminError::Queue)?,
            max: max.map_err(AdminError::Queue)?,
            default_max: self.default_max[task.index()],
        })
    }

    /// Validates and sets the max: 1..=[`MAX_CONCURRENCY`].
    pub async fn set(
        &self,
        task: TaskType,
        input: SetConcurrency,
    ) -> Result<ConcurrencyView, AdminError> {
        let max = u32::try_from(input.max)
            .ok()
            .filter(|m| (1..=MAX_CONCURRENCY).contains(m))
            .ok_or_else(|| {
                AdminError::Invalid(vec![FieldError::new(
                    "/max",
                    format!("must be between 1 and {MAX_CONCURRENCY}"),
                )])
            })?;
        self.semaphore
            .set_max(task, max)
            .await
            .map_err(AdminError::Queue)?;
        self.get(task).await
    }

    /// Forgets the holders (slots left by crashed nodes) of the given types; optionally drops
    /// the operator's max too (by setting the default back).
    pub async fn reset(
        &self,
        input: &ResetConcurrency,
    ) -> Result<Vec<ConcurrencyView>, AdminError> {
        let tasks = input
            .task_types
            .clone()
            .unwrap_or_else(|| TaskType::ALL.to_vec());
        for task in &tasks {
            self.semaphore
                .reset(*task)
                .await
                .map_err(AdminError::Queue)?;
            if input.clear_max {
                self.semaphore
                    .set_max(*task, self.default_max[task.index()])
                    .await
                    .map_err(AdminError::Queue)?;
            }
        }
        let mut out = Vec::new();
        for task in tasks {
            out.push(self.get(task).await?);
        }
        Ok(out)
    }
}
