//! Singleton leases `polling:lease:{job}`: at most one node runs a job (initializer, package
//! check, data reset, alert evaluation, cleanup) while it holds the lease.

use super::token_lock;
use crate::{Keys, QueueError, RedisKey};
use fred::clients::Pool;
use std::time::Duration;

/// Proof of holding the lease of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a lease is held until released or until its TTL ends"]
pub struct LeaseToken {
    pub job: String,
    /// The value stored at the key; only its holder can renew or release.
    pub token: String,
    /// The TTL a renewal restarts.
    pub ttl: Duration,
}

/// Takes, renews and releases singleton leases.
#[derive(Debug, Clone)]
pub struct SingletonLease {
    pool: Pool,
    keys: Keys,
}

impl SingletonLease {
    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self { pool, keys }
    }

    fn key(&self, job: &str) -> String {
        self.keys.render(&RedisKey::Lease {
            job: job.to_owned(),
        })
    }

    /// Takes the lease of `job` for `ttl`, or `None` when another holder has it.
    pub async fn try_acquire(
        &self,
        job: &str,
        ttl: Duration,
    ) -> Result<Option<LeaseToken>, QueueError> {
        let token = token_lock::try_take(&self.pool, self.key(job), ttl).await?;
        Ok(token.map(|token| LeaseToken {
            job: job.to_owned(),
            token,
            ttl,
        }))
    }

    /// Restarts the lease's TTL. `false`: the lease was lost (expired, taken by another node);
    /// the job must stop.
    pub async fn renew(&self, lease: &LeaseToken) -> Result<bool, QueueError> {
        token_lock::extend(&self.pool, self.key(&lease.job), &lease.token, lease.ttl).await
    }

    /// Gives the lease back; never deletes another holder's lease. `false`: it was not ours.
    pub async fn release(&self, lease: LeaseToken) -> Result<bool, QueueError> {
        token_lock::give_back(&self.pool, self.key(&lease.job), &lease.token).await
    }
}
