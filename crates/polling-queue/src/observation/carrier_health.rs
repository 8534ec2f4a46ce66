//! `polling:carrier:health`: how each carrier's calls are going, as the worker nodes saw them
//! lately (one hash, field = carrier id, value = JSON of [`CarrierHealth`]). Worker nodes
//! publish; the API's carrier page and `/readyz` read. One key, so nothing here can cross
//! slots on a cluster.
//!
//! Several nodes publish the same carrier: the last write wins, which is the freshest view
//! (each value carries its own `updated_at`). The hash expires a day after the last publish, so
//! a deployment whose workers all stopped does not show a health board forever.

use crate::{Keys, QueueError, RedisKey};
use domain::{CarrierHealth, CarrierId};
use fred::prelude::*;
use std::collections::HashMap;

/// How long the board outlives its last publish.
const BOARD_TTL_SECS: i64 = 24 * 3600;

/// Publishes and reads `polling:carrier:health`.
#[derive(Debug, Clone)]
pub struct CarrierHealthBoard {
    pool: Pool,
    key: String,
}

impl CarrierHealthBoard {
    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self {
            pool,
            key: keys.render(&RedisKey::CarrierHealth),
        }
    }

    /// Writes one carrier's health (replacing what any node wrote for it before).
    pub async fn publish(&self, health: &CarrierHealth) -> Result<(), QueueError> {
        let value = serde_json::to_string(health)?;
        let pipeline = self.pool.next().pipeline();
        let _: () = pipeline
            .hset(&self.key, (health.carrier_id.to_string(), value))
            .await?;
        let _: () = pipeline.expire(&self.key, BOARD_TTL_SECS, None).await?;
        let _: Vec<fred::types::Value> = pipeline.all().await?;
        Ok(())
    }

    /// Every carrier's health, by carrier id; values that do not decode (written by another
    /// version) are skipped.
    pub async fn read_all(&self) -> Result<Vec<CarrierHealth>, QueueError> {
        let map: HashMap<String, String> = self.pool.hgetall(&self.key).await?;
        let mut all: Vec<CarrierHealth> = map
            .values()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect();
        all.sort_by_key(|h| h.carrier_id);
        Ok(all)
    }

    /// One carrier's health; `None` when none was published (or it does not decode).
    pub async fn read(&self, carrier: CarrierId) -> Result<Option<CarrierHealth>, QueueError> {
        let value: Option<String> = self.pool.hget(&self.key, carrier.to_string()).await?;
        Ok(value.and_then(|v| serde_json::from_str(&v).ok()))
    }
}
