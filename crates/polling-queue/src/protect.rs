//! Device protect periods: `polling:protect:stop:{device}` / `polling:protect:start:{device}`.
//!
//! A device is in at most one protect period: setting one deletes the other. The key expires
//! with the period.

use crate::{Keys, QueueError, RedisKey};
use domain::DeviceId;
use fred::prelude::*;
use fred::types::Expiration;
use std::time::Duration;

/// Which protect periods a device is in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtectState {
    /// The device was stopped: its cards must stay stopped until the period ends.
    pub stop: bool,
    /// The device was started: its cards must stay online until the period ends.
    pub start: bool,
}

/// The protect-period keys.
#[derive(Debug, Clone)]
pub struct ProtectKeys {
    pool: Pool,
    keys: Keys,
}

impl ProtectKeys {
    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self { pool, keys }
    }

    /// Starts a stop protect period of `ttl`, ending any start period.
    pub async fn set_stop(&self, device: DeviceId, ttl: Duration) -> Result<(), QueueError> {
        let [stop, start] = self.period_keys(device);
        self.set(stop, start, ttl).await
    }

    /// Starts a start protect period of `ttl`, ending any stop period.
    pub async fn set_start(&self, device: DeviceId, ttl: Duration) -> Result<(), QueueError> {
        let [stop, start] = self.period_keys(device);
        self.set(start, stop, ttl).await
    }

    /// The keys of `device`'s stop and start periods, in that order.
    fn period_keys(&self, device: DeviceId) -> [String; 2] {
        [
            self.keys.render(&RedisKey::ProtectStop { device }),
            self.keys.render(&RedisKey::ProtectStart { device }),
        ]
    }

    async fn set(&self, on: String, off: String, ttl: Duration) -> Result<(), QueueError> {
        // Two keys may live on two cluster nodes: a pipeline, not MULTI. The delete goes first,
        // so a reader never sees both set.
        let pipe = self.pool.next().pipeline();
        let _: () = pipe.del(off).await?;
        let px = Expiration::PX(ttl.as_millis().max(1) as i64);
        let _: () = pipe.set(on, 1, Some(px), None, false).await?;
        let _: Vec<fred::types::Value> = pipe.all().await?;
        Ok(())
    }

    /// Which periods `device` is in now.
    pub async fn protect_state(&self, device: DeviceId) -> Result<ProtectState, QueueError> {
        let states = self.protect_states(&[device]).await?;
        Ok(states.first().copied().unwrap_or_default())
    }

    /// [`protect_state`](Self::protect_state) of many devices, in order, in one pipeline (the
    /// protect polls of many cards read together).
    pub async fn protect_states(
        &self,
        devices: &[DeviceId],
    ) -> Result<Vec<ProtectState>, QueueError> {
        if devices.is_empty() {
            return Ok(Vec::new());
        }
        let pipe = self.pool.next().pipeline();
        for key in devices.iter().flat_map(|&device| self.period_keys(device)) {
            let _: () = pipe.exists(key).await?;
        }
        let found: Vec<i64> = pipe.all().await?;
        Ok(found
            .chunks(2)
            .map(|pair| ProtectState {
                stop: pair.first().is_some_and(|n| *n > 0),
                start: pair.get(1).is_some_and(|n| *n > 0),
            })
            .collect())
    }

    /// Ends both periods. Idempotent.
    pub async fn clear(&self, device: DeviceId) -> Result<(), QueueError> {
        let pipe = self.pool.next().pipeline();
        for key in self.period_keys(device) {
            let _: () = pipe.del(key).await?;
        }
        let _: Vec<fred::types::Value> = pipe.all().await?;
        Ok(())
    }
}
