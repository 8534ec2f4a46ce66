//! The background refresher: every five minutes (seed) and at once on `polling:configs:changed`
//! (ours: changes reach every process within a second).

use crate::{ConfigError, PollingConfigManager};
use fred::clients::SubscriberClient;
use fred::prelude::*;
use fred::types::Message;
use polling_queue::RedisKey;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The periodic refresh (`docs/rules.md`, "Polling configs": every 5 minutes).
pub const REFRESH_EVERY: Duration = Duration::from_secs(300);

impl PollingConfigManager {
    /// Subscribes to `polling:configs:changed` (a subscriber client built from the pool's Redis
    /// config) and spawns the refresh loop: every [`REFRESH_EVERY`] and on every message, until
    /// `shutdown`. The subscription is active when this returns.
    pub async fn spawn_refresher(
        &self,
        shutdown: CancellationToken,
    ) -> Result<JoinHandle<()>, ConfigError> {
        self.spawn_refresher_every(REFRESH_EVERY, shutdown).await
    }

    /// [`spawn_refresher`](Self::spawn_refresher) with another period (tests, tuning).
    pub async fn spawn_refresher_every(
        &self,
        period: Duration,
        shutdown: CancellationToken,
    ) -> Result<JoinHandle<()>, ConfigError> {
        let subscriber = polling_queue::subscriber(&self.inner.pool).await?;
        let messages = subscriber.message_rx();
        let channel = self.inner.keys.render(&RedisKey::ConfigsChanged);
        subscriber.subscribe(channel).await?;
        let manager = self.clone();
        Ok(tokio::spawn(async move {
            manager
                .refresh_loop(&subscriber, messages, period, shutdown)
                .await;
            if let Err(error) = subscriber.quit().await {
                tracing::debug!(%error, "config subscriber quit");
            }
        }))
    }

    async fn refresh_loop(
        &self,
        _subscriber: &SubscriberClient,
        mut messages: tokio::sync::broadcast::Receiver<Message>,
        period: Duration,
        shutdown: CancellationToken,
    ) {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut subscribed = true;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {}
                msg = messages.recv(), if subscribed => match msg {
                    // A burst of changes costs one reload.
                    Ok(_) | Err(RecvError::Lagged(_)) => while messages.try_recv().is_ok() {},
                    Err(RecvError::Closed) => {
                        tracing::warn!("config change channel closed; refreshing on the timer only");
                        subscribed = false;
                        continue;
                    }
                },
            }
            if let Err(error) = self.refresh().await {
                tracing::warn!(%error, "polling config refresh failed; keeping the last good configs");
            }
        }
    }
}
