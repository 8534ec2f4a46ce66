//! [`PollingConfigManager`]: database -> Redis hash -> memory.

use crate::{ConfigError, ConfigSnapshot, MatchedConfig};
use domain::store::PollingConfigStore;
use domain::{CardMatchFields, PollingConfig, TaskType};
use fred::prelude::*;
use fred::types::Value;
use polling_queue::{Keys, RedisKey};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// TTL of the Redis hash `polling:configs` (`docs/contract.md`, "Redis keys").
const HASH_TTL: Duration = Duration::from_secs(24 * 3600);

/// Loads polling configs, mirrors them into Redis and answers matches from memory.
///
/// Cheap to clone: clones share the same cache. Shared by the API (matching, `publish_changed`)
/// and the worker (handlers, lifecycle, initializer).
#[derive(Clone)]
pub struct PollingConfigManager {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    store: Arc<dyn PollingConfigStore>,
    pub(crate) pool: Pool,
    pub(crate) keys: Keys,
    /// Replaced whole on refresh; readers clone the `Arc` inside and never wait on I/O.
    current: RwLock<ConfigSnapshot>,
    /// The fingerprint of `current`, announced to whoever reacts to a change of the configs in
    /// force (the worker's queue reconciliation).
    changes: tokio::sync::watch::Sender<u64>,
}

impl std::fmt::Debug for PollingConfigManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollingConfigManager")
            .field("configs", &self.snapshot().configs().len())
            .finish_non_exhaustive()
    }
}

impl PollingConfigManager {
    /// An empty manager; call [`start`](Self::start) (or [`refresh`](Self::refresh)) to load.
    pub fn new(store: Arc<dyn PollingConfigStore>, pool: Pool, keys: Keys) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                pool,
                keys,
                current: RwLock::new(ConfigSnapshot::default()),
                changes: tokio::sync::watch::Sender::new(ConfigSnapshot::default().fingerprint()),
            }),
        }
    }

    /// First load at process start: from the database; when the database cannot be read, from
    /// the Redis hash another process wrote (logged). Returns the number of enabled configs.
    pub async fn start(&self) -> Result<usize, ConfigError> {
        match self.refresh().await {
            Err(ConfigError::Store(db_error)) => {
                let configs = self.read_hash().await?;
                tracing::warn!(
                    %db_error,
                    configs = configs.len(),
                    "polling configs: database unreachable, loaded the redis copy"
                );
                Ok(self.install(configs))
            }
            other => other,
        }
    }

    /// Reloads every config (enabled and disabled) from the database, replaces the in-memory
    /// set, then rewrites the Redis hash. On a database error the last good set stays in use.
    /// Returns the number of enabled configs.
    pub async fn refresh(&self) -> Result<usize, ConfigError> {
        let configs = self.inner.store.list_all().await?;
        let json = configs
            .iter()
            .map(|c| Ok((c.id.to_string(), serde_json::to_string(c)?)))
            .collect::<Result<Vec<(String, String)>, serde_json::Error>>()?;
        let enabled = self.install(configs);
        self.write_hash(json).await?;
        tracing::debug!(enabled, "polling configs refreshed");
        Ok(enabled)
    }

    fn install(&self, configs: Vec<PollingConfig>) -> usize {
        let snapshot = ConfigSnapshot::new(configs);
        let n = snapshot.configs().len();
        let fingerprint = snapshot.fingerprint();
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(|p| p.into_inner()) = snapshot;
        self.inner.changes.send_if_modified(|current| {
            let changed = *current != fingerprint;
            *current = fingerprint;
            changed
        });
        n
    }

    /// Announces every change of the enabled configs in force (their fingerprint) after a
    /// refresh, whatever caused it: a `polling:configs:changed` message, the periodic
    /// refresh, or a local [`refresh`](Self::refresh).
    pub fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Replaces the hash atomically (MULTI): deleted configs disappear, the TTL restarts.
    async fn write_hash(&self, entries: Vec<(String, String)>) -> Result<(), ConfigError> {
        let key = self.inner.keys.render(&RedisKey::Configs);
        let trx = self.inner.pool.next().multi();
        let _: () = trx.del(&key).await?;
        if !entries.is_empty() {
            let _: () = trx.hset(&key, entries).await?;
            let _: () = trx.expire(&key, HASH_TTL.as_secs() as i64, None).await?;
        }
        let _: Vec<Value> = trx.exec(true).await?;
        Ok(())
    }

    async fn read_hash(&self) -> Result<Vec<PollingConfig>, ConfigError> {
        let key = self.inner.keys.render(&RedisKey::Configs);
        let raw: HashMap<String, String> = self.inner.pool.hgetall(key).await?;
        raw.values()
            .map(|json| serde_json::from_str(json).map_err(ConfigError::from))
            .collect()
    }

    /// Tells every process (this one included) to reload now. The admin API calls it after
    /// every create, update, delete or status change of a config.
    pub async fn publish_changed(&self) -> Result<(), ConfigError> {
        let channel = self.inner.keys.render(&RedisKey::ConfigsChanged);
        let _: i64 = self.inner.pool.next().publish(channel, "changed").await?;
        Ok(())
    }

    /// The current enabled configs in matching order.
    pub fn snapshot(&self) -> ConfigSnapshot {
        self.inner
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The config the card matches (`docs/rules.md`, "Polling configs"), from memory only.
    pub fn match_config(&self, card: &CardMatchFields) -> Option<MatchedConfig> {
        let current = self.inner.current.read().unwrap_or_else(|p| p.into_inner());
        current.match_config(card)
    }

    /// The interval of `task` for the card; `None`: unmatched, or that type is not scheduled.
    pub fn matched_interval(&self, card: &CardMatchFields, task: TaskType) -> Option<Duration> {
        self.match_config(card)?.interval(task)
    }
}
