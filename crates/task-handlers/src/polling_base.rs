//! [`PollingBase`]: what the four handlers share (`docs/rules.md`, "Polls").

use crate::identities::IdentityLoader;
use crate::snapshots::SnapshotLoader;
use crate::{HandlerError, HandlerSettings};
use chrono::{DateTime, Utc};
use domain::store::{CardStore, PackageStore};
use domain::{Card, CardId, CardIdentity, Clock, PackageUsage, TaskType};
use gateway::CarrierGateway;
use lifecycle::PollingLifecycleService;
use polling_config::PollingConfigManager;
use polling_queue::{CardCache, ConcurrencySemaphore, Permit, PollingQueueManager, TaskCounters};
use std::sync::Arc;
use std::time::Duration;
use stop_resume::{Action, ProtectEvidence, StopResumeService, decide};
use tracing::warn;

/// Concurrency slots, the card cache, rescheduling, the matched interval and the lifecycle
/// service that keeps queue membership equal to the matched config. Cheap to clone: every
/// field is a handle, so each handler owns a clone.
#[derive(Clone)]
pub struct PollingBase {
    pub(crate) configs: PollingConfigManager,
    pub(crate) queue: PollingQueueManager,
    pub(crate) semaphore: ConcurrencySemaphore,
    pub(crate) cache: CardCache,
    /// Reads the identities of concurrent polls together (cache pipeline, one store read).
    pub(crate) identities: IdentityLoader,
    /// Reads the cards, packages and protect states of concurrent package and protect polls
    /// together (the preview before a locked evaluation).
    pub(crate) snapshots: SnapshotLoader,
    pub(crate) counters: TaskCounters,
    pub(crate) lifecycle: PollingLifecycleService,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) settings: HandlerSettings,
}

impl std::fmt::Debug for PollingBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollingBase")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl PollingBase {
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub fn settings(&self) -> &HandlerSettings {
        &self.settings
    }

    /// A cluster-wide slot of `task`'s own pool (`polling:concurrency:{type}`): the pools are
    /// isolated, so realname polls never use carddata's quota. `None`: the pool is full (the
    /// scheduler dequeues no more than the pool's room, so this is a race lost to another node).
    pub async fn acquire_concurrency(
        &self,
        task: TaskType,
    ) -> Result<Option<Permit>, HandlerError> {
        Ok(self.semaphore.acquire(task).await?)
    }

    /// Gives the slot back. A failure only logs: the slot frees itself when its lease ends.
    pub async fn release_concurrency(&self, permit: Permit) {
        let task = permit.task;
        if let Err(error) = self.semaphore.release(permit).await {
            warn!(task = %task, %error, "cannot release the concurrency slot; its lease frees it");
        }
    }

    /// The card's identity (what the cache may hold: see [`CardIdentity`]), from the Redis
    /// cache when there (its TTL restarts: sliding window), else from the store, then cached.
    /// `None`: the card does not exist or is deleted. Concurrent calls are served together:
    /// one cache pipeline and at most one store read for all of them.
    pub async fn get_card_with_cache(
        &self,
        card_id: CardId,
    ) -> Result<Option<CardIdentity>, HandlerError> {
        self.identities
            .get(card_id)
            .await
            .map_err(HandlerError::BatchedRead)
    }

    /// Whether the decision table asks for an action on the card and packages as read ("nothing"
    /// without the protect period is "nothing" with it: `evaluate_and_act` may be skipped).
    pub(crate) fn table_asks_for_action(&self, card: &Card, packages: &[PackageUsage]) -> bool {
        let preview = decide(card, packages, ProtectEvidence::default(), self.now());
        !matches!(preview.action, Action::Nothing { .. })
    }

    /// Stores the card's identity. If Redis refuses, the entry is dropped instead so that the
    /// next poll reads the store.
    pub async fn update_card_cache(&self, identity: &CardIdentity) {
        if let Err(error) = self.cache.set(identity).await {
            warn!(card_id = %identity.id, %error, "cannot update the card cache; invalidating it");
            if let Err(error) = self.cache.invalidate(identity.id).await {
                warn!(card_id = %identity.id, %error, "cannot invalidate the card cache either");
            }
        }
    }

    /// The interval of `task` in the config the card matches now; `None`: no config matches,
    /// or the matched config does not schedule `task`.
    pub fn matched_interval(&self, card: &Card, task: TaskType) -> Option<Duration> {
        self.configs.matched_interval(&card.match_fields(), task)
    }
}

/// What every poll handler holds, built once by [`HandlerDeps::polling`](crate::HandlerDeps):
/// the shared base, the carrier gateway, the card and package stores and `stop-resume`. Cheap
/// to clone: every field is a handle. A handler holds it plus only what is its own.
#[derive(Clone)]
pub struct PollingDeps {
    pub base: PollingBase,
    pub gateway: Arc<dyn CarrierGateway>,
    pub cards: Arc<dyn CardStore>,
    pub packages: Arc<dyn PackageStore>,
    pub stop_resume: StopResumeService,
}

impl std::fmt::Debug for PollingDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollingDeps")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}
