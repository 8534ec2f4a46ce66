//! [`CountingGateway`]: wraps the carrier gateway and counts each call's outcome per minute
//! (`ok`, `error`, `throttled`) in Redis, for the gateway error and throttle rates of the alert
//! rules and the metrics history. The count is written in a spawned task: a poll never waits
//! for it, and a Redis hiccup loses a count, never a poll.

use domain::{CarrierId, CarrierPackage, Clock, MonthUsage, NetworkStatus, RealNameStatus};
use gateway::{CarrierGateway, GatewayError};
use polling_queue::{GatewayOutcome, RecentCounters};
use std::sync::Arc;

/// A [`CarrierGateway`] that counts outcomes.
pub struct CountingGateway {
    inner: Arc<dyn CarrierGateway>,
    recent: RecentCounters,
    clock: Arc<dyn Clock>,
}

impl CountingGateway {
    pub fn new(
        inner: Arc<dyn CarrierGateway>,
        recent: RecentCounters,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            inner,
            recent,
            clock,
        }
    }

    fn count<T>(&self, res: &Result<T, GatewayError>) {
        let outcome = match res {
            Ok(_) | Err(GatewayError::NotFound) => GatewayOutcome::Ok,
            Err(GatewayError::Throttled { .. } | GatewayError::RateLimited) => {
                GatewayOutcome::Throttled
            }
            Err(_) => GatewayOutcome::Error,
        };
        let recent = self.recent.clone();
        let at = self.clock.now();
        tokio::spawn(async move {
            if let Err(e) = recent.record_gateway(outcome, at).await {
                tracing::debug!(error = %e, "gateway outcome not counted");
            }
        });
    }
}

#[async_trait::async_trait]
impl CarrierGateway for CountingGateway {
    async fn realname(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<RealNameStatus, GatewayError> {
        let res = self.inner.realname(carrier, iccid).await;
        self.count(&res);
        res
    }

    async fn usage(&self, carrier: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        let res = self.inner.usage(carrier, iccid).await;
        self.count(&res);
        res
    }

    async fn packages(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        let res = self.inner.packages(carrier, iccid).await;
        self.count(&res);
        res
    }

    async fn stop(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        let res = self.inner.stop(carrier, iccid).await;
        self.count(&res);
        res
    }

    async fn start(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        let res = self.inner.start(carrier, iccid).await;
        self.count(&res);
        res
    }

    async fn network_status(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        let res = self.inner.network_status(carrier, iccid).await;
        self.count(&res);
        res
    }

    fn batch_size(&self, carrier: CarrierId) -> usize {
        self.inner.batch_size(carrier)
    }

    async fn realname_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<RealNameStatus, GatewayError>>, GatewayError> {
        let res = self.inner.realname_batch(carrier, iccids).await;
        self.count(&res);
        res
    }

    async fn usage_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
        let res = self.inner.usage_batch(carrier, iccids).await;
        self.count(&res);
        res
    }

    async fn network_status_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<NetworkStatus, GatewayError>>, GatewayError> {
        let res = self.inner.network_status_batch(carrier, iccids).await;
        self.count(&res);
        res
    }

    /// Not counted as a poll: a listing serves many cards (`cmp_carrier_sync_*` count it).
    async fn sync_page(
        &self,
        carrier: CarrierId,
        since: chrono::DateTime<chrono::Utc>,
        page: u32,
    ) -> Result<domain::SyncPage, GatewayError> {
        self.inner.sync_page(carrier, since, page).await
    }

    /// Not counted: a probe is an operator's test, not polling traffic.
    async fn probe(&self, carrier: CarrierId) -> Result<(), GatewayError> {
        self.inner.probe(carrier).await
    }
}
