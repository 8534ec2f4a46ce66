//! China Telecom 5GCMP: not written yet.

use super::AdapterContext;
use super::transport::CarrierHttp;
use crate::{CarrierGateway, GatewayError};
use async_trait::async_trait;
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, MonthUsage, NetworkStatus, RealNameStatus,
};

#[derive(Debug)]
pub(crate) struct Ctcc {
    http: CarrierHttp,
}

impl Ctcc {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        Ok(Self {
            http: CarrierHttp::new(account, ctx)?,
        })
    }
}

#[async_trait]
impl CarrierGateway for Ctcc {
    async fn realname(&self, _: CarrierId, _: &str) -> Result<RealNameStatus, GatewayError> {
        Err(GatewayError::Unsupported("realname"))
    }
    async fn usage(&self, _: CarrierId, _: &str) -> Result<MonthUsage, GatewayError> {
        Err(GatewayError::Unsupported("usage"))
    }
    async fn packages(&self, _: CarrierId, _: &str) -> Result<Vec<CarrierPackage>, GatewayError> {
        Err(GatewayError::Unsupported("packages"))
    }
    async fn stop(&self, _: CarrierId, _: &str) -> Result<NetworkStatus, GatewayError> {
        Err(GatewayError::Unsupported("stop"))
    }
    async fn start(&self, _: CarrierId, _: &str) -> Result<NetworkStatus, GatewayError> {
        let _ = &self.http;
        Err(GatewayError::Unsupported("start"))
    }
}
