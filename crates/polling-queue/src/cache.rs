//! The card cache at `polling:card:{id}`: JSON, TTL 300 s, refreshed on every hit.
//!
//! It holds a [`CardIdentity`] only — the facts that change through lifecycle events, which
//! drop the entry — never counters, real-name or network state (see [`CardIdentity`]).

use crate::{Keys, QueueError, RedisKey};
use domain::{CardId, CardIdentity};
use fred::prelude::*;
use fred::types::{CustomCommand, Expiration, Value};
use std::time::Duration;

/// Card identities in Redis, so a poll does not read PostgreSQL to learn which card to ask
/// the carrier about.
#[derive(Debug, Clone)]
pub struct CardCache {
    pool: Pool,
    keys: Keys,
    ttl: Duration,
}

impl CardCache {
    /// The contract's TTL.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self::with_ttl(pool, keys, Self::DEFAULT_TTL)
    }

    pub fn with_ttl(pool: Pool, keys: Keys, ttl: Duration) -> Self {
        Self { pool, keys, ttl }
    }

    fn ttl_secs(&self) -> i64 {
        self.ttl.as_secs().max(1) as i64
    }

    /// The cached identity, its TTL restarted (GETEX EX). An entry that no longer decodes (e.g.
    /// a whole card snapshot written by an older version) is dropped and reported as a miss.
    pub async fn get(&self, card: CardId) -> Result<Option<CardIdentity>, QueueError> {
        let key = self.keys.render(&RedisKey::Card { card });
        let cmd = CustomCommand::new_static("GETEX", fred::types::ClusterHash::FirstKey, false);
        let raw: Option<String> = self
            .pool
            .custom(
                cmd,
                vec![key.clone(), "EX".into(), self.ttl_secs().to_string()],
            )
            .await?;
        let Some(raw) = raw else { return Ok(None) };
        match serde_json::from_str(&raw) {
            Ok(c) => Ok(Some(c)),
            Err(error) => {
                tracing::warn!(card_id = card.get(), %error, "dropping undecodable card cache entry");
                self.invalidate(card).await?;
                Ok(None)
            }
        }
    }

    /// The cached identities of many cards, in order, each entry's TTL restarted: one pipeline
    /// of `GETEX` (one command per key: the keys hash to different slots on Redis Cluster). An
    /// entry that no longer decodes counts as a miss (and is overwritten by the caller's fill).
    pub async fn get_many(
        &self,
        cards: &[CardId],
    ) -> Result<Vec<Option<CardIdentity>>, QueueError> {
        if cards.is_empty() {
            return Ok(Vec::new());
        }
        let pipe = self.pool.next().pipeline();
        for card in cards {
            let key = self.keys.render(&RedisKey::Card { card: *card });
            let cmd = CustomCommand::new_static("GETEX", fred::types::ClusterHash::FirstKey, false);
            let _: () = pipe
                .custom(cmd, vec![key, "EX".into(), self.ttl_secs().to_string()])
                .await?;
        }
        let raw: Vec<Option<String>> = pipe.all().await?;
        Ok(raw
            .into_iter()
            .map(|entry| entry.and_then(|json| serde_json::from_str(&json).ok()))
            .collect())
    }

    /// Stores many identities for the TTL, one pipeline.
    pub async fn set_many(&self, identities: &[CardIdentity]) -> Result<(), QueueError> {
        if identities.is_empty() {
            return Ok(());
        }
        let pipe = self.pool.next().pipeline();
        for identity in identities {
            let key = self.keys.render(&RedisKey::Card { card: identity.id });
            let json = serde_json::to_string(identity)?;
            let _: () = pipe
                .set(
                    key,
                    json,
                    Some(Expiration::EX(self.ttl_secs())),
                    None,
                    false,
                )
                .await?;
        }
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }

    /// Stores `card` for the TTL (a pipeline of one `SET`).
    pub async fn set(&self, card: &CardIdentity) -> Result<(), QueueError> {
        self.set_many(std::slice::from_ref(card)).await
    }

    /// Drops the snapshots of many cards in one pipeline (the cards changed outside polling:
    /// status, binding, polling switch). Idempotent.
    pub async fn invalidate_many(&self, cards: &[CardId]) -> Result<(), QueueError> {
        // One DEL per key: the keys hash to different slots on Redis Cluster.
        for chunk in cards.chunks(1_000) {
            let pipe = self.pool.next().pipeline();
            for card in chunk {
                let _: () = pipe
                    .del(self.keys.render(&RedisKey::Card { card: *card }))
                    .await?;
            }
            let _: Vec<i64> = pipe.all().await?;
        }
        Ok(())
    }

    /// Drops the snapshot (the card changed or was deleted). Idempotent.
    pub async fn invalidate(&self, card: CardId) -> Result<(), QueueError> {
        let _: i64 = self
            .pool
            .del(self.keys.render(&RedisKey::Card { card }))
            .await?;
        Ok(())
    }
}

impl crate::PollingQueueManager {
    /// The card cache on the same Redis and key prefix as these queues.
    pub fn card_cache(&self) -> CardCache {
        CardCache::new(self.pool.clone(), self.keys.clone())
    }
}
