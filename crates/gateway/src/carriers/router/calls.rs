//! Every call of the trait, sent to its carrier's route (`CarrierRouter::with_route`): tallied
//! for the carrier's health, and the cards it carries released from the dispatch's pending count.

use super::CarrierRouter;
use crate::{CarrierGateway, GatewayError};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::{CarrierId, CarrierPackage, MonthUsage, NetworkStatus, RealNameStatus, SyncPage};

#[async_trait]
impl CarrierGateway for CarrierRouter {
    async fn realname(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<RealNameStatus, GatewayError> {
        self.with_route(
            (carrier, 1),
            |g| async move { g.realname(carrier, iccid).await },
        )
        .await
    }

    async fn usage(&self, carrier: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        self.with_route(
            (carrier, 1),
            |g| async move { g.usage(carrier, iccid).await },
        )
        .await
    }

    async fn packages(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        self.with_route(
            (carrier, 1),
            |g| async move { g.packages(carrier, iccid).await },
        )
        .await
    }

    async fn stop(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.with_route(
            (carrier, 1),
            |g| async move { g.stop(carrier, iccid).await },
        )
        .await
    }

    async fn start(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.with_route(
            (carrier, 1),
            |g| async move { g.start(carrier, iccid).await },
        )
        .await
    }

    async fn network_status(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        self.with_route((carrier, 1), |g| async move {
            g.network_status(carrier, iccid).await
        })
        .await
    }

    fn batch_size(&self, carrier: CarrierId) -> usize {
        self.route(carrier)
            .0
            .map(|g| g.batch_size(carrier))
            .unwrap_or(1)
    }

    async fn realname_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<RealNameStatus, GatewayError>>, GatewayError> {
        self.with_route((carrier, iccids.len()), |g| async move {
            g.realname_batch(carrier, iccids).await
        })
        .await
    }

    async fn usage_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
        self.with_route((carrier, iccids.len()), |g| async move {
            g.usage_batch(carrier, iccids).await
        })
        .await
    }

    async fn network_status_batch(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<NetworkStatus, GatewayError>>, GatewayError> {
        self.with_route((carrier, iccids.len()), |g| async move {
            g.network_status_batch(carrier, iccids).await
        })
        .await
    }

    async fn sync_page(
        &self,
        carrier: CarrierId,
        since: DateTime<Utc>,
        page: u32,
    ) -> Result<SyncPage, GatewayError> {
        // No poll waits on a listing: it releases no pending card.
        self.with_route((carrier, 0), |g| async move {
            g.sync_page(carrier, since, page).await
        })
        .await
    }

    async fn probe(&self, carrier: CarrierId) -> Result<(), GatewayError> {
        // A probe goes out even for a disabled carrier: an operator tests before enabling.
        let route = self.routes().get(&carrier).map(|r| r.adapter.clone());
        let configured = route.is_some();
        let res = route
            .unwrap_or_else(|| self.default.clone())
            .probe(carrier)
            .await;
        if configured {
            self.tally(carrier, &res);
        }
        res
    }
}
