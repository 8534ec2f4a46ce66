//! Per-card lock `polling:lock:card:{id}` of the stop/resume service: one evaluation of a card
//! at a time across the cluster.

use super::token_lock;
use crate::{Keys, QueueError, RedisKey};
use domain::CardId;
use fred::clients::Pool;
use std::time::Duration;

/// The value a lock holder proves ownership with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a card lock is held until unlocked or until its TTL ends"]
pub struct CardLockToken(pub String);

/// Per-card evaluation locks.
#[derive(Debug, Clone)]
pub struct CardLock {
    pool: Pool,
    keys: Keys,
}

impl CardLock {
    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self { pool, keys }
    }

    /// Locks `card` for at most `ttl`, or `None` when it is locked by someone else.
    pub async fn try_lock(
        &self,
        card: CardId,
        ttl: Duration,
    ) -> Result<Option<CardLockToken>, QueueError> {
        let key = self.keys.render(&RedisKey::CardLock { card });
        Ok(token_lock::try_take(&self.pool, key, ttl)
            .await?
            .map(CardLockToken))
    }

    /// Unlocks `card` if `token` still holds it; whether it did (`false`: the lock had expired
    /// and maybe been taken by another holder, which is left alone).
    pub async fn unlock(&self, card: CardId, token: CardLockToken) -> Result<bool, QueueError> {
        let key = self.keys.render(&RedisKey::CardLock { card });
        token_lock::give_back(&self.pool, key, &token.0).await
    }

    /// Restarts the lock's TTL if `token` still holds it (`false`: it was lost). The holder
    /// renews while it works, so a slow carrier cannot outlast the lock.
    pub async fn renew(
        &self,
        card: CardId,
        token: &CardLockToken,
        ttl: Duration,
    ) -> Result<bool, QueueError> {
        let key = self.keys.render(&RedisKey::CardLock { card });
        token_lock::extend(&self.pool, key, &token.0, ttl).await
    }
}
