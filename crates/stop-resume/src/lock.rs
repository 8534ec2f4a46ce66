//! The per-card lock `polling:lock:card:{id}` around every read-decide-act of the service:
//! taken with a bounded wait, renewed while the work runs, released by compare-and-delete.

use crate::{StopResumeError, StopResumeService};
use domain::CardId;
use polling_queue::CardLockToken;
use std::future::Future;
use tracing::{debug, warn};

impl StopResumeService {
    /// Runs `work` holding the card's lock, renewing it every third of its TTL for as long as
    /// `work` runs (three tries of a slow carrier plus back-off and rate-limit waits can outlast
    /// any fixed TTL); releases it by compare-and-delete. If `work` is cancelled the lock
    /// simply expires with its TTL.
    pub(crate) async fn locked<T>(
        &self,
        card_id: CardId,
        work: impl Future<Output = Result<T, StopResumeError>>,
    ) -> Result<T, StopResumeError> {
        let token = self.acquire(card_id).await?;
        let ttl = self.settings.lock_ttl;
        let mut renew = tokio::time::interval(ttl / 3);
        renew.tick().await;
        tokio::pin!(work);
        let out = loop {
            tokio::select! {
                out = &mut work => break out,
                _ = renew.tick() => match self.lock.renew(card_id, &token, ttl).await {
                    Ok(true) => {}
                    Ok(false) => warn!(card_id = %card_id, "card lock lost while held"),
                    Err(e) => warn!(card_id = %card_id, error = %e, "cannot renew the card lock"),
                },
            }
        };
        self.release(card_id, token).await;
        out
    }

    async fn acquire(&self, card_id: CardId) -> Result<CardLockToken, StopResumeError> {
        let deadline = tokio::time::Instant::now() + self.settings.lock_wait;
        loop {
            if let Some(token) = self.lock.try_lock(card_id, self.settings.lock_ttl).await? {
                return Ok(token);
            }
            if tokio::time::Instant::now() >= deadline {
                debug!(card_id = %card_id, "card lock still held elsewhere; giving up");
                return Err(StopResumeError::Busy(card_id));
            }
            tokio::time::sleep(self.settings.lock_retry).await;
        }
    }

    async fn release(&self, card_id: CardId, token: CardLockToken) {
        match self.lock.unlock(card_id, token).await {
            Ok(true) => {}
            Ok(false) => warn!(card_id = %card_id, ttl = ?self.settings.lock_ttl,
                "card lock expired before the evaluation finished; raise the lock TTL"),
            Err(e) => warn!(card_id = %card_id, error = %e,
                "could not release the card lock; it expires with its TTL"),
        }
    }
}
