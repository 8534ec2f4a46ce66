//! The subscriber connection of the `polling:*` pub/sub channels (`polling:configs:changed`,
//! `polling:queue:wake`).

use fred::clients::{Pool, SubscriberClient};
use fred::prelude::*;

/// A connected subscriber client built from `pool`'s Redis config (same server or cluster,
/// same reconnect policy) that subscribes again to its channels after a reconnect.
pub async fn subscriber(pool: &Pool) -> Result<SubscriberClient, fred::error::Error> {
    let client = pool.next();
    let policy = client
        .client_reconnect_policy()
        .unwrap_or_else(|| ReconnectPolicy::new_exponential(0, 100, 5_000, 2));
    let subscriber = Builder::from_config(client.client_config())
        .with_connection_config(|c| *c = client.connection_config().clone())
        .with_performance_config(|p| *p = client.perf_config())
        .set_policy(policy)
        .build_subscriber_client()?;
    subscriber.init().await?;
    // Runs until the client quits; its handle is not needed to keep it running.
    drop(subscriber.manage_subscriptions());
    Ok(subscriber)
}
