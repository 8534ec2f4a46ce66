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
//!   [`network_of`].
//! * `stop` / `start`: Edit Device Details (`PUT /v1/devices/{iccid}`, `{"status":
//!   "DEACTIVATED" | "ACTIVATED"}`), answered `{iccid}`; without an `effectiveDate` the change is
//!   immediate, so the status after the call is the one asked (no read-back: the platform allows
//!   5 calls a second per account).
//! * `realname`: [`GatewayError::Unsupported`]: Control Center has no real-name (KYC) concept and
//!   no documented field carries China Unicom's verification.
//! * `packages`: an empty list, without a request: a device has one rate plan, named only; the
//!   device answers carry no data allowance to build a [`CarrierPackage`] from.
//! * No batch call: `batch_size` is 1. Search Devices (`GET /v1/devices?modifiedSince=…`, pages
//!   of 50) is [`ControlCenter::modified_since`], for a delta sync; the trait has no such call.

use super::AdapterContext;
use super::transport::{Answer, CarrierHttp};
use super::units;
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, MonthUsage, NetworkStatus, RealNameStatus,
    Secret,
};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use tracing::debug;

/// Records one Search Devices page may hold (Cisco: "Page size is limited to 50 records").
pub const SEARCH_PAGE_SIZE: u32 = 50;

/// The documented SIM status values and what they mean for the network: the platform lets a
/// card on the network in `ACTIVATED`, `ACTIVATION_READY` and `TEST_READY` (the last two are
/// pre-billing states in which the device can establish data sessions); in every other
/// documented state it does not. `None`: not a documented value.
pub(crate) fn network_of(status: &str) -> Option<NetworkStatus> {
    match status {
        "ACTIVATED" | "ACTIVATION_READY" | "TEST_READY" => Some(NetworkStatus::Online),
        "DEACTIVATED" | "INVENTORY" | "RETIRED" | "PURGED" | "REPLACED" => {
            Some(NetworkStatus::Stopped)
        }
        _ => None,
    }
}

/// The status word an Edit Device Details request asks for.
fn status_word(n: NetworkStatus) -> &'static str {
    match n {
        NetworkStatus::Online => "ACTIVATED",
        NetworkStatus::Stopped => "DEACTIVATED",
    }
}

/// One Search Devices page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevicePage {
    pub page_number: u32,
    pub devices: Vec<ModifiedDevice>,
    /// No page follows this one.
    pub last_page: bool,
}

/// A device of a Search Devices page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifiedDevice {
    pub iccid: String,
    /// The platform's word, as answered.
    pub status: String,
    /// `status` through [`network_of`]; an undocumented value is
    /// [`GatewayError::Unintelligible`] for this device alone.
    pub network: Result<NetworkStatus, GatewayError>,
    pub rate_plan: Option<String>,
    pub communication_plan: Option<String>,
}

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

/// `{"errorMessage", "errorCode"}`, the code a string (read a number too).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorBody {
    error_code: Option<Value>,
    error_message: Option<String>,
}

impl ErrorBody {
    fn code(&self) -> Option<String> {
        match self.error_code.as_ref()? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchAnswer {
    page_number: u32,
    devices: Vec<SearchDevice>,
    last_page: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchDevice {
    iccid: String,
    status: String,
    #[serde(default)]
    rate_plan: Option<String>,
    #[serde(default)]
    communication_plan: Option<String>,
}

/// An ICCID as one path segment (ICCIDs are digits; anything else is percent-encoded).
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `2016-04-18T17:31:34+00:00` (the documented form), query-encoded.
fn instant_param(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%%2B00%%3A00").to_string()
}

impl ControlCenter {
    /// The adapter of `account` (credentials `username` and `api_key`).
    pub fn new(account: &CarrierAccount, ctx: &AdapterContext) -> Result<Self, GatewayError> {
        let field = |name: &str| {
            account
                .credentials
                .get(name)
                .filter(|s| !s.is_empty())
                .cloned()
                .ok_or_else(|| GatewayError::Auth(format!("control-center needs `{name}`")))
        };
        Ok(Self {
            http: CarrierHttp::new(account, ctx)?,
            username: field("username")?,
            api_key: field("api_key")?,
            timezone: ctx.timezone,
            clock: ctx.clock.clone(),
        })
    }

    fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        req.basic_auth(self.username.expose(), Some(self.api_key.expose()))
            .header(reqwest::header::ACCEPT, "application/json")
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.authed(self.http.client().get(self.http.url(path)))
    }

    /// A non-success answer as our error, from the platform's error table (see the docs page):
    /// 401 (`10000001` or no code) and 400 `10000030` (role without access) → `Auth`; 404
    /// `20000001` → `NotFound`; 429 → `Throttled`; an HTML page → `Unintelligible`; anything
    /// else → `Carrier` with the body's start.
    fn refused(&self, what: &str, answer: &Answer) -> GatewayError {
        if answer.status == 429 {
            return GatewayError::Throttled {
                retry_after: answer.retry_after(),
            };
        }
        if answer.looks_like_html() {
            // A console host or a proxy, not the REST tier: nothing about the card is known.
            return self.http.fault(
                AnswerFault::NotJson,
                format!(
                    "{what}: an HTML page (HTTP {}): {}",
                    answer.status,
                    self.http.excerpt(answer)
                ),
            );
        }
        let body: ErrorBody = serde_json::from_slice(&answer.body).unwrap_or_default();
        let code = body.code();
        let message = self
            .http
            .scrub(body.error_message.as_deref().unwrap_or_default());
        match (answer.status, code.as_deref()) {
            (401, _) => GatewayError::Auth(format!(
                "{what}: Control Center refused the credentials ({}: {message})",
                code.as_deref().unwrap_or("no code")
            )),
            (400, Some("10000030")) => GatewayError::Auth(format!(
                "{what}: the API user's role has no access to this function (10000030: {message})"
            )),
            (404, Some("20000001")) => GatewayError::NotFound,
            (status, _) => GatewayError::Carrier {
                status,
                body: self.http.excerpt(answer),
            },
        }
    }

    /// The answer's `iccid`, which must be the one asked.
    fn check_iccid(&self, what: &str, asked: &str, body: &Value) -> Result<(), GatewayError> {
        match body.get("iccid") {
            Some(Value::String(s)) if s == asked => Ok(()),
            Some(Value::String(s)) => Err(self.http.fault(
                AnswerFault::WrongIccid,
                format!("{what}: asked {asked}, the answer is for {s}"),
            )),
            None | Some(Value::Null) => Err(self
                .http
                .fault(AnswerFault::MissingField, format!("{what}: no `iccid`"))),
            Some(other) => Err(self
                .http
                .fault(AnswerFault::BadValue, format!("{what}: `iccid` is {other}"))),
        }
    }

    /// `status` of an answer through [`network_of`].
    fn network(&self, what: &str, body: &Value) -> Result<NetworkStatus, GatewayError> {
        match body.get("status") {
            Some(Value::String(s)) => network_of(s).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::UnknownStatus,
                    format!("{what}: SIM status `{s}` is not a documented value"),
                )
            }),
            None | Some(Value::Null) => Err(self
                .http
                .fault(AnswerFault::MissingField, format!("{what}: no `status`"))),
            Some(other) => Err(self.http.fault(
                AnswerFault::BadValue,
                format!("{what}: `status` is {other}"),
            )),
        }
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
                if !answer.is_success() {
                    return Err(self.refused(call, &answer));
                }
                let v: Value = self.http.json(call, &answer)?;
                self.check_iccid(call, iccid, &v)?;
                // The documented answer is `{iccid}`; a status, when one comes, must be known.
                if v.get("status").is_some() {
                    return self.network(call, &v);
                }
                Ok(want)
            })
            .await
    }

    /// Search Devices: the devices modified since `since`, page `page` (from 1) of
    /// [`SEARCH_PAGE_SIZE`], in the platform's order. Follow `last_page` for the next page.
    pub async fn modified_since(
        &self,
        since: DateTime<Utc>,
        page: u32,
    ) -> Result<DevicePage, GatewayError> {
        let page = page.max(1);
        let answer = self
            .search(since, SEARCH_PAGE_SIZE, page, "search_devices")
            .await?;
        let devices = answer
            .devices
            .into_iter()
            .map(|d| ModifiedDevice {
                network: network_of(&d.status).ok_or_else(|| {
                    self.http.fault(
                        AnswerFault::UnknownStatus,
                        format!(
                            "search_devices: SIM status `{}` of {} is not a documented value",
                            d.status, d.iccid
                        ),
                    )
                }),
                iccid: d.iccid,
                status: d.status,
                rate_plan: d.rate_plan,
                communication_plan: d.communication_plan,
            })
            .collect();
        Ok(DevicePage {
            page_number: answer.page_number,
            devices,
            last_page: answer.last_page,
        })
    }

    async fn search(
        &self,
        since: DateTime<Utc>,
        page_size: u32,
        page: u32,
        call: &'static str,
    ) -> Result<SearchAnswer, GatewayError> {
        let path = format!(
            "/v1/devices?modifiedSince={}&pageSize={page_size}&pageNumber={page}",
            instant_param(since)
        );
        let answer = self.http.query(call, self.get(&path)).await?;
        if !answer.is_success() {
            return Err(self.refused(call, &answer));
        }
        let found: SearchAnswer = self.http.json(call, &answer)?;
        if found.page_number != page {
            return Err(self.http.fault(
                AnswerFault::BadValue,
                format!(
                    "{call}: asked page {page}, the answer is page {}",
                    found.page_number
                ),
            ));
        }
        Ok(found)
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
        let answer = self.http.query(CALL, self.get(&path)).await?;
        if !answer.is_success() {
            return Err(self.refused(CALL, &answer));
        }
        let v: Value = self.http.json(CALL, &answer)?;
        self.check_iccid(CALL, iccid, &v)?;
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
        let answer = self.http.query(CALL, self.get(&path)).await?;
        if !answer.is_success() {
            return Err(self.refused(CALL, &answer));
        }
        let v: Value = self.http.json(CALL, &answer)?;
        self.check_iccid(CALL, iccid, &v)?;
        self.network(CALL, &v)
    }

    fn batch_size(&self, _: CarrierId) -> usize {
        1
    }

    /// Search Devices modified since now, one record: authenticated, harmless, tiny.
    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        self.search(self.clock.now(), 1, 1, "probe")
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn every_documented_status_has_a_network_meaning() {
        for s in ["ACTIVATED", "ACTIVATION_READY", "TEST_READY"] {
            assert_eq!(network_of(s), Some(NetworkStatus::Online), "{s}");
        }
        for s in ["DEACTIVATED", "INVENTORY", "RETIRED", "PURGED", "REPLACED"] {
            assert_eq!(network_of(s), Some(NetworkStatus::Stopped), "{s}");
        }
        assert_eq!(network_of("activated"), None);
        assert_eq!(network_of("SUSPENDED"), None);
    }

    #[test]
    fn request_texts_are_encoded() {
        assert_eq!(segment("89860012345"), "89860012345");
        assert_eq!(segment("89/86 0"), "89%2F86%200");
        let at = Utc.with_ymd_and_hms(2016, 4, 18, 17, 31, 34).unwrap();
        assert_eq!(instant_param(at), "2016-04-18T17:31:34%2B00%3A00");
    }
}
