//! Cisco IoT Control Center REST API (Jasper; China Unicom's platform runs it too).
//! `docs/carriers/control-center.md` is this adapter's page: endpoints, limits, tables and the
//! assumptions a real account should confirm.
//!
//! * Auth: HTTP Basic `username:api_key` on every request; no token, nothing to renew. A 401 is
//!   [`GatewayError::Auth`] at once (retrying the same key cannot help).
//! * `usage`: Get Device Usage (`GET /v1/devices/{iccid}/ctdUsages`), `ctdDataUsage` in bytes
//!   since the start of the billing cycle, divided by 1,048,576 exactly. The answer names no
//!   cycle: the total is attributed to the current month of our time zone (`CMP_TIMEZONE`),
//!   which assumes the account's cycle is the calendar month in that zone.
//! * `network_status`: Get Device Details (`GET /v1/devices/{iccid}`), `status` through
//!   [`wire::network_of`].
//! * `stop` / `start`: Edit Device Details (`PUT /v1/devices/{iccid}`, `{"status":
//!   "DEACTIVATED" | "ACTIVATED"}`), answered `{iccid}`; without an `effectiveDate` the change is
//!   immediate, so the status after the call is the one asked (no read-back: the platform allows
//!   5 calls a second per account).
//! * `realname`: [`GatewayError::Unsupported`]: Control Center has no real-name (KYC) concept and
//!   no documented field carries China Unicom's verification.
//! * `packages`: an empty list, without a request: a device has one rate plan, named only; the
//!   device answers carry no data allowance to build a [`CarrierPackage`] from.
//! * No batch call: `batch_size` is 1. Search Devices (`GET /v1/devices?modifiedSince=…`, pages
//!   of 50) is [`ControlCenter::modified_since`], and the record sync's listing (`sync_page`:
//!   the devices changed since the watermark, their SIM status).

mod search;
mod wire;

#[cfg(test)]
mod tests;

pub use search::{DevicePage, ModifiedDevice, SEARCH_PAGE_SIZE};

use super::transport::{Answer, CarrierHttp};
use super::units;
use super::{AdapterContext, credential};
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, MonthUsage, NetworkStatus, RealNameStatus,
    Secret,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use tracing::debug;
use wire::{check_iccid, network, refused, segment, status_word};

/// The Control Center adapter.
pub struct ControlCenter {
    http: CarrierHttp,
    username: Secret,
    api_key: Secret,
    timezone: chrono_tz::Tz,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ControlCenter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The credentials print as `***`.
        f.debug_struct("ControlCenter")
            .field("http", &self.http)
            .field("username", &self.username)
            .field("api_key", &self.api_key)
            .field("timezone", &self.timezone)
            .finish_non_exhaustive()
    }
}

impl ControlCenter {
    /// The adapter of `account` (credentials `username` and `api_key`).
    pub fn new(account: &CarrierAccount, ctx: &AdapterContext) -> Result<Self, GatewayError> {
        Ok(Self {
            http: CarrierHttp::new(account, ctx)?,
            username: credential(account, "username")?,
            api_key: credential(account, "api_key")?,
            timezone: ctx.timezone,
            clock: ctx.clock.clone(),
        })
    }

    fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        req.basic_auth(self.username.expose(), Some(self.api_key.expose()))
            .header(reqwest::header::ACCEPT, "application/json")
    }

    /// A success answer's JSON; any other answer through the platform's error table.
    fn read<T: DeserializeOwned>(&self, call: &str, answer: &Answer) -> Result<T, GatewayError> {
        if !answer.is_success() {
            return Err(refused(&self.http, call, answer));
        }
        self.http.json(call, answer)
    }

    /// One authenticated `GET path`, its answer read.
    async fn fetch<T: DeserializeOwned>(
        &self,
        call: &'static str,
        path: &str,
    ) -> Result<T, GatewayError> {
        let req = self.authed(self.http.client().get(self.http.url(path)));
        let answer = self.http.query(call, req).await?;
        self.read(call, &answer)
    }

    /// One device answer of `GET path`, checked to be about `iccid`.
    async fn device(
        &self,
        call: &'static str,
        path: &str,
        iccid: &str,
    ) -> Result<Value, GatewayError> {
        let v: Value = self.fetch(call, path).await?;
        check_iccid(&self.http, call, iccid, &v)?;
        Ok(v)
    }

    /// One Edit Device Details request asking for `want`.
    async fn set_status(
        &self,
        iccid: &str,
        want: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        let call = match want {
            NetworkStatus::Stopped => "stop",
            NetworkStatus::Online => "start",
        };
        let path = format!("/v1/devices/{}", segment(iccid));
        let body = serde_json::json!({ "status": status_word(want) });
        self.http
            .retry_command(call, || async {
                let req = self
                    .authed(self.http.client().put(self.http.url(&path)))
                    .json(&body);
                let answer = self.http.command(call, req).await?;
                let v: Value = self.read(call, &answer)?;
                check_iccid(&self.http, call, iccid, &v)?;
                // The documented answer is `{iccid}`; a status, when one comes, must be known.
                if v.get("status").is_some() {
                    return network(&self.http, call, &v);
                }
                Ok(want)
            })
            .await
    }
}

#[async_trait]
impl CarrierGateway for ControlCenter {
    async fn realname(&self, _: CarrierId, _: &str) -> Result<RealNameStatus, GatewayError> {
        Err(GatewayError::Unsupported("realname"))
    }

    async fn usage(&self, _: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        const CALL: &str = "usage";
        let path = format!("/v1/devices/{}/ctdUsages", segment(iccid));
        let v = self.device(CALL, &path, iccid).await?;
        let raw = match v.get("ctdDataUsage") {
            None | Some(Value::Null) => {
                return Err(self
                    .http
                    .fault(AnswerFault::MissingField, "usage: no `ctdDataUsage`"));
            }
            Some(raw) => raw,
        };
        let bytes = units::amount_of(raw).ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("usage: `ctdDataUsage` {raw} is not a non-negative decimal"),
            )
        })?;
        let mb = units::bytes_to_mb(bytes)
            .ok_or_else(|| {
                self.http
                    .fault(AnswerFault::BadValue, "usage: bytes overflow")
            })
            .and_then(|mb| {
                units::check_month_total(mb).map_err(|e| {
                    self.http
                        .fault(AnswerFault::BadValue, format!("usage: {e}"))
                })
            })?;
        debug!(carrier = %self.http.carrier, iccid, bytes = %bytes, mb = %mb, "control-center cycle-to-date usage");
        Ok(MonthUsage {
            month: units::month_of(self.clock.now(), self.timezone),
            month_total_mb: mb,
        })
    }

    async fn packages(&self, _: CarrierId, _: &str) -> Result<Vec<CarrierPackage>, GatewayError> {
        Ok(Vec::new())
    }

    async fn stop(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.set_status(iccid, NetworkStatus::Stopped).await
    }

    async fn start(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.set_status(iccid, NetworkStatus::Online).await
    }

    async fn network_status(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        const CALL: &str = "network_status";
        let path = format!("/v1/devices/{}", segment(iccid));
        let v = self.device(CALL, &path, iccid).await?;
        network(&self.http, CALL, &v)
    }

    fn batch_size(&self, _: CarrierId) -> usize {
        1
    }

    /// Search Devices modified since now, one record: authenticated, harmless, tiny.
    async fn sync_page(
        &self,
        _: CarrierId,
        since: chrono::DateTime<chrono::Utc>,
        page: u32,
    ) -> Result<domain::SyncPage, GatewayError> {
        self.listing(since, page).await
    }

    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        self.search(self.clock.now(), 1, 1, "probe")
            .await
            .map(|_| ())
    }
}
