//! China Telecom 5GCMP (天翼物联 5G 连接管理平台), through its API gateway
//! (`https://cmp-api.ctwing.cn:20164`). `docs/carriers/ctcc-5gcmp.md` is the page: endpoints,
//! signature, limits, status and unit tables, and the assumptions a real account should confirm.
//!
//! No token: every request carries `AppKey`, `Timestamp` (`yyyyMMddHHmmss`, GMT) and `Sign`, the
//! hexadecimal of the ASCII of the lower-case hexadecimal MD5 of
//! `sorted query + raw body + secret + timestamp`, upper-cased (the gateway's `SignUtil.signMD5`).
//!
//! Calls: real-name, SIM status and month usage through the platform's batch queries (up to 100
//! numbers a call, [`batch`]), products of one card, and stop/resume through LC002
//! `disabledNumberService` (`orderTypeId` 19 停机保号 / 20 停机保号复机, [`command`]), which
//! answers XML. [`wire`] reads the answers.

mod batch;
mod command;
mod wire;

#[cfg(test)]
mod tests;

pub use wire::sign;

use super::transport::{Answer, CarrierHttp};
use super::{AdapterContext, credential};
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use batch::{REALNAME, SIM_STATUS, USAGE};
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, MonthUsage, NetworkStatus, RealNameStatus,
    Secret,
};
use serde_json::{Value, json};
use std::sync::Arc;
use wire::encode;

/// Most numbers one batch query carries (the platform's documented limit).
const PLATFORM_BATCH_MAX: usize = 100;

const PRODUCTS_PATH: &str = "/api/v1/prod/qryProdInstInfo/";

#[derive(Debug)]
pub(crate) struct Ctcc {
    http: CarrierHttp,
    app_key: Secret,
    secret: Secret,
    clock: Arc<dyn Clock>,
    batch_max: usize,
}

impl Ctcc {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        Ok(Self {
            http: CarrierHttp::new(account, ctx)?,
            app_key: credential(account, "app_key")?,
            secret: credential(account, "secret")?,
            clock: ctx.clock.clone(),
            batch_max: (account.limits.batch_size as usize).clamp(1, PLATFORM_BATCH_MAX),
        })
    }

    // ------------------------------------------------------------ signing and requests

    /// `AppKey`, `Timestamp`, `Sign` of a request whose sorted query and raw body are given.
    fn signed(&self, query: &str, body: &str) -> [(&'static str, String); 3] {
        let ts = self.clock.now().format("%Y%m%d%H%M%S").to_string();
        let sign = sign(query, body, self.secret.expose(), &ts);
        [
            ("AppKey", self.app_key.expose().to_owned()),
            ("Timestamp", ts),
            ("Sign", sign),
        ]
    }

    async fn post_json(
        &self,
        call: &'static str,
        path: &str,
        body: &Value,
    ) -> Result<Answer, GatewayError> {
        let body = body.to_string();
        let mut req = self.http.client().post(self.http.url(path)).header(
            reqwest::header::CONTENT_TYPE,
            "application/json;charset=utf-8",
        );
        for (k, v) in self.signed("", &body) {
            req = req.header(k, v);
        }
        self.http.query(call, req.body(body)).await
    }

    /// A GET with `params` sent (and signed) in key order.
    async fn get(
        &self,
        call: &'static str,
        path: &str,
        params: &[(&str, &str)],
        command: bool,
    ) -> Result<Answer, GatewayError> {
        let mut sorted: Vec<(&str, &str)> = params.to_vec();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let query = sorted
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let url = if query.is_empty() {
            self.http.url(path)
        } else {
            format!("{}?{query}", self.http.url(path))
        };
        let mut req = self.http.client().get(url);
        for (k, v) in self.signed(&query, "") {
            req = req.header(k, v);
        }
        if command {
            self.http.command(call, req).await
        } else {
            self.http.query(call, req).await
        }
    }
}

#[async_trait]
impl CarrierGateway for Ctcc {
    async fn realname(&self, _: CarrierId, iccid: &str) -> Result<RealNameStatus, GatewayError> {
        self.single(&REALNAME, iccid).await
    }

    async fn usage(&self, _: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        self.single(&USAGE, iccid).await
    }

    async fn packages(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        let path = format!("{PRODUCTS_PATH}{}", encode(iccid));
        let answer = self
            .get("packages", &path, &[("access_number", iccid)], false)
            .await?;
        let data = self.envelope("packages", &answer)?;
        match data.get("accessNumber").and_then(Value::as_str) {
            Some(n) if n == iccid => {}
            Some(n) => {
                return Err(self.http.fault(
                    AnswerFault::WrongIccid,
                    format!("packages: the answer names {n}, asked {iccid}"),
                ));
            }
            None => {
                return Err(self
                    .http
                    .fault(AnswerFault::MissingField, "packages: no accessNumber"));
            }
        }
        let offers = data
            .get("offerList")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                self.http
                    .fault(AnswerFault::MissingField, "packages: no offerList")
            })?;
        offers.iter().map(|o| self.parse_offer(o)).collect()
    }

    async fn stop(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.change("stop", iccid, "19", NetworkStatus::Stopped)
            .await
    }

    async fn start(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.change("start", iccid, "20", NetworkStatus::Online)
            .await
    }

    async fn network_status(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        self.single(&SIM_STATUS, iccid).await
    }

    fn batch_size(&self, _: CarrierId) -> usize {
        self.batch_max
    }

    async fn realname_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<RealNameStatus, GatewayError>>, GatewayError> {
        self.batch_results(&REALNAME, iccids).await
    }

    async fn usage_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
        self.batch_results(&USAGE, iccids).await
    }

    async fn network_status_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<NetworkStatus, GatewayError>>, GatewayError> {
        self.batch_results(&SIM_STATUS, iccids).await
    }

    /// A batch real-name query of no number: signed, harmless. A parameter refusal (the
    /// platform may want at least one number) still proves the signature was accepted.
    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        let answer = self
            .post_json("probe", REALNAME.path, &json!({ "accessNumber": [] }))
            .await?;
        match self.envelope("probe", &answer) {
            Ok(_) => Ok(()),
            Err(GatewayError::Carrier { status, .. }) if (200..300).contains(&status) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
