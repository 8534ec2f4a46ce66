//! 1NCE Management API (`https://api.1nce.com/management-api`): OAuth2 client credentials, then
//! Bearer calls on `/v1/sims...`. `docs/carriers/1nce.md` is its page (endpoints, limits, tables,
//! assumptions).
//!
//! - Token: `POST /oauth/token`, HTTP Basic `client_id:client_secret`, JSON body
//!   `{"grant_type":"client_credentials"}`; the answer's `access_token` lives `expires_in`
//!   seconds. Cached ([`TokenCache`]); a call answered 401 drops the token, gets a new one and
//!   is sent once more; a second 401 is [`GatewayError::Auth`].
//! - Real-name: 1NCE has no KYC status. A SIM the platform knows (`GET /v1/sims/{iccid}`) is
//!   `Verified`: 1NCE cards are registered to the buying business, and an unverified answer would
//!   make the core stop cards for a check the platform does not have.
//! - Usage: `GET /v1/sims/{iccid}/usage?start_dt&end_dt` answers daily records, `data.volume` in
//!   MB as a decimal string; the month-to-date total is the exact sum of the records dated in our
//!   current month (`CMP_TIMEZONE`).
//! - Packages: `GET /v1/sims/{iccid}/quota/data`, the SIM's one data quota: `total_volume` is
//!   the limit, `total_volume - volume` the used MB.
//! - Stop / start: `PUT /v1/sims/{iccid}` `{"iccid", "status": "Disabled" | "Enabled"}`.
//! - Network status: `status` of `GET /v1/sims/{iccid}` (`Enabled` / `Disabled`).
//! - No batch: the SIM list cannot be filtered by ICCID, so every query is per card
//!   ([`OneNce::sims_page`] reads the list a page at a time, with the totals of its headers).

use super::AdapterContext;
use super::token::TokenCache;
use super::transport::{Answer, CarrierHttp};
use super::units::{amount_of, check_month_total, month_of, parse_amount};
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use chrono::{DateTime, Months, NaiveDate, NaiveDateTime, Utc};
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, Megabytes, MonthUsage, NetworkStatus,
    PackageStatus, RealNameStatus,
};
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Most SIMs one page of `GET /v1/sims` holds (the documented maximum of `pageSize`).
pub(crate) const PAGE_SIZE_MAX: u32 = 100;

/// `expires_in` when the token answer does not say (the documented default).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// The `external_id` of the SIM's data quota (1NCE's v1 quota has no id of its own).
pub(crate) const DATA_QUOTA_ID: &str = "data-quota";

#[derive(Debug)]
pub(crate) struct OneNce {
    http: CarrierHttp,
    client_id: String,
    client_secret: String,
    tokens: TokenCache,
    timezone: chrono_tz::Tz,
    clock: Arc<dyn Clock>,
}

/// One page of the SIM list ([`OneNce::sims_page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimsPage {
    /// The SIMs of the page in the platform's order: ICCID and network status (a status outside
    /// the table is an error of that SIM alone).
    pub(crate) sims: Vec<(String, Result<NetworkStatus, GatewayError>)>,
    /// `X-Current-Page`, else the page asked.
    pub(crate) page: u32,
    /// `X-Total-Count`: SIMs of the account, when sent.
    pub(crate) total_count: Option<u64>,
    /// `X-Total-Pages`, when sent.
    pub(crate) total_pages: Option<u64>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// The fields of a SIM (`SIM_card`) the adapter reads.
#[derive(Deserialize)]
struct SimAnswer {
    iccid: String,
    #[serde(default)]
    iccid_with_luhn: Option<String>,
    status: String,
}

#[derive(Deserialize)]
struct UsageAnswer {
    stats: Vec<Value>,
}

#[derive(Deserialize)]
struct QuotaAnswer {
    #[serde(default)]
    volume: Option<Value>,
    #[serde(default)]
    total_volume: Option<Value>,
    #[serde(default)]
    expiry_date: Option<String>,
    /// v2 answers carry `{id, description: ACTIVE | EXHAUSTED | EXPIRED}`; v1 none.
    #[serde(default)]
    status: Option<Value>,
}

/// The SIM status table: 1NCE's words (SIM_card.status) to ours.
fn network_of(word: &str) -> Option<NetworkStatus> {
    if word.eq_ignore_ascii_case("Enabled") {
        Some(NetworkStatus::Online)
    } else if word.eq_ignore_ascii_case("Disabled") {
        Some(NetworkStatus::Stopped)
    } else {
        None
    }
}

/// The word `PUT /v1/sims/{iccid}` takes for a network status.
const fn word_of(status: NetworkStatus) -> &'static str {
    match status {
        NetworkStatus::Online => "Enabled",
        NetworkStatus::Stopped => "Disabled",
    }
}

/// The month's first and last day.
fn month_bounds(first: NaiveDate) -> (NaiveDate, NaiveDate) {
    let last = first
        .checked_add_months(Months::new(1))
        .and_then(|d| d.pred_opt())
        .unwrap_or(first);
    (first, last)
}

/// A date-time as 1NCE writes them: ISO 8601 with `Z`, `+00:00` or `+0000`, or
/// `YYYY-MM-DD HH:MM:SS` (UTC).
fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Some(d.with_timezone(&Utc));
    }
    if let Ok(d) = DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z") {
        return Some(d.with_timezone(&Utc));
    }
    for f in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, f) {
            return Some(d.and_utc());
        }
    }
    None
}

/// `text` percent-encoded for a path segment or a query value (ICCIDs are digits; anything
/// else must not change the request's shape).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `url` with the query `pairs`.
fn with_query(mut url: String, pairs: &[(&str, String)]) -> String {
    for (i, (k, v)) in pairs.iter().enumerate() {
        url.push(if i == 0 { '?' } else { '&' });
        url.push_str(&escape(k));
        url.push('=');
        url.push_str(&escape(v));
    }
    url
}

/// A JSON number or string that may be negative (a quota's `volume` is, once overdrawn).
fn signed_amount(v: &Value) -> Option<Decimal> {
    let text = match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    match text.strip_prefix('-') {
        Some(abs) => parse_amount(abs).map(|d| -d),
        None => parse_amount(&text),
    }
}

impl OneNce {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        let field = |name: &str| {
            account
                .credentials
                .get(name)
                .map(|s| s.expose().to_owned())
                .filter(|s| !s.is_empty())
                .ok_or_else(|| GatewayError::Auth(format!("1nce needs credentials field `{name}`")))
        };
        Ok(Self {
            client_id: field("client_id")?,
            client_secret: field("client_secret")?,
            http: CarrierHttp::new(account, ctx)?,
            tokens: TokenCache::default(),
            timezone: ctx.timezone,
            clock: ctx.clock.clone(),
        })
    }

    /// A new access token and its lifetime (`POST /oauth/token`).
    async fn fetch_token(&self) -> Result<(String, Duration), GatewayError> {
        let req = self
            .http
            .client()
            .post(self.http.url("/oauth/token"))
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header(reqwest::header::ACCEPT, "application/json")
            .json(&serde_json::json!({"grant_type": "client_credentials"}));
        let answer = self.http.query("token", req).await?;
        match answer.status {
            200..=299 => {}
            401 | 403 => {
                return Err(GatewayError::Auth(format!(
                    "1NCE refused the client credentials (HTTP {}): {}",
                    answer.status,
                    self.http.excerpt(&answer)
                )));
            }
            400 => {
                // Bearer_Token_400: BadCredentials / AuthValidationError are the credentials;
                // BodyValidationError / UnsupportedContentTypeError are the request's shape.
                let code = serde_json::from_slice::<Value>(&answer.body)
                    .ok()
                    .and_then(|v| {
                        v.get("errorCode")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    });
                return Err(match code.as_deref() {
                    Some("BadCredentials" | "AuthValidationError") => GatewayError::Auth(format!(
                        "1NCE refused the client credentials (HTTP 400): {}",
                        self.http.excerpt(&answer)
                    )),
                    _ => GatewayError::Carrier {
                        status: 400,
                        body: self.http.excerpt(&answer),
                    },
                });
            }
            _ => return Err(self.failure(&answer)),
        }
        let t: TokenAnswer = self.http.json("token", &answer)?;
        if t.access_token.is_empty() {
            return Err(self
                .http
                .fault(AnswerFault::MissingField, "token: empty access_token"));
        }
        self.http.add_secret(&t.access_token);
        if let Some(kind) = t.token_type.as_deref()
            && !kind.eq_ignore_ascii_case("bearer")
        {
            return Err(self.http.fault(
                AnswerFault::BadValue,
                format!("token: token_type `{kind}`, expected bearer"),
            ));
        }
        let lifetime = t
            .expires_in
            .filter(|s| *s > 0)
            .map_or(DEFAULT_TOKEN_LIFETIME, Duration::from_secs);
        Ok((t.access_token, lifetime))
    }

    async fn token(&self) -> Result<String, GatewayError> {
        self.tokens.get(|| self.fetch_token()).await
    }

    /// One Bearer request built by `build` (given the token): sent, and on 401 sent once more
    /// with a renewed token (the token expired mid-run); a second 401 is `Auth`.
    async fn call<F>(
        &self,
        call: &'static str,
        command: bool,
        build: F,
    ) -> Result<Answer, GatewayError>
    where
        F: Fn(&str) -> reqwest::RequestBuilder,
    {
        let mut renewed = false;
        loop {
            let token = self.token().await?;
            let req = build(&token).header(reqwest::header::ACCEPT, "application/json");
            let answer = if command {
                self.http.command(call, req).await?
            } else {
                self.http.query(call, req).await?
            };
            if answer.status != 401 {
                return Ok(answer);
            }
            self.tokens.invalidate(&token).await;
            if renewed {
                return Err(GatewayError::Auth(format!(
                    "1NCE refused a newly issued access token (HTTP 401): {}",
                    self.http.excerpt(&answer)
                )));
            }
            renewed = true;
        }
    }

    /// A non-success answer as an error: 404 the card, 429 throttling, others `Carrier`.
    fn failure(&self, answer: &Answer) -> GatewayError {
        match answer.status {
            404 => GatewayError::NotFound,
            429 => GatewayError::Throttled {
                retry_after: answer.retry_after(),
            },
            401 => GatewayError::Auth(format!("1NCE answered 401: {}", self.http.excerpt(answer))),
            status => GatewayError::Carrier {
                status,
                body: self.http.excerpt(answer),
            },
        }
    }

    fn sim_path(iccid: &str, tail: &str) -> String {
        format!("/v1/sims/{}{tail}", escape(iccid))
    }

    /// A GET of the card's resource `tail`, success only.
    async fn get(
        &self,
        call: &'static str,
        iccid: &str,
        tail: &str,
        query: &[(&str, String)],
    ) -> Result<Answer, GatewayError> {
        let url = with_query(self.http.url(&Self::sim_path(iccid, tail)), query);
        let answer = self
            .call(call, false, |token| {
                self.http.client().get(&url).bearer_auth(token)
            })
            .await?;
        if answer.is_success() {
            Ok(answer)
        } else {
            Err(self.failure(&answer))
        }
    }

    /// `GET /v1/sims/{iccid}`, checked to be the card asked.
    async fn sim(&self, call: &'static str, iccid: &str) -> Result<SimAnswer, GatewayError> {
        let answer = self.get(call, iccid, "", &[]).await?;
        let sim: SimAnswer = self.http.json(call, &answer)?;
        let named = sim.iccid == iccid || sim.iccid_with_luhn.as_deref() == Some(iccid);
        if !named {
            return Err(self.http.fault(
                AnswerFault::WrongIccid,
                format!("{call}: asked {iccid}, the answer is of {}", sim.iccid),
            ));
        }
        Ok(sim)
    }

    fn status_of(
        &self,
        call: &str,
        iccid: &str,
        word: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        network_of(word).ok_or_else(|| {
            self.http.fault(
                AnswerFault::UnknownStatus,
                format!("{call}: SIM {iccid} has status `{word}`, not Enabled/Disabled"),
            )
        })
    }

    /// One page (from 1) of the account's SIMs, up to 100 (`GET /v1/sims?page&pageSize=100`),
    /// with the totals of the response headers.
    /// The admin API's probe reads page 1.
    pub(crate) async fn sims_page(&self, page: u32) -> Result<SimsPage, GatewayError> {
        let page = page.max(1);
        let url = with_query(
            self.http.url("/v1/sims"),
            &[
                ("page", page.to_string()),
                ("pageSize", PAGE_SIZE_MAX.to_string()),
            ],
        );
        let answer = self
            .call("sims", false, |token| {
                self.http.client().get(&url).bearer_auth(token)
            })
            .await?;
        if !answer.is_success() {
            return Err(self.failure(&answer));
        }
        let header = |name: &str| {
            answer
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        let (current, total_count, total_pages) = (
            header("X-Current-Page"),
            header("X-Total-Count"),
            header("X-Total-Pages"),
        );
        let items: Vec<SimAnswer> = self.http.json("sims", &answer)?;
        let sims = items
            .into_iter()
            .map(|s| {
                let status = self.status_of("sims", &s.iccid, &s.status);
                (s.iccid, status)
            })
            .collect();
        Ok(SimsPage {
            sims,
            page: current.and_then(|p| u32::try_from(p).ok()).unwrap_or(page),
            total_count,
            total_pages,
        })
    }

    /// `PUT /v1/sims/{iccid}` with the wanted status; the status after it.
    async fn set_status(
        &self,
        call: &'static str,
        iccid: &str,
        wanted: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        let url = self.http.url(&Self::sim_path(iccid, ""));
        let body = serde_json::json!({"iccid": iccid, "status": word_of(wanted)});
        let answer = self
            .call(call, true, |token| {
                self.http.client().put(&url).json(&body).bearer_auth(token)
            })
            .await?;
        if !answer.is_success() {
            return Err(self.failure(&answer));
        }
        // The documented answer is empty; a page from a proxy is not an acceptance.
        if answer.looks_like_html() {
            return Err(self.http.fault(
                AnswerFault::NotJson,
                format!(
                    "{call}: an HTML page (HTTP {}): {}",
                    answer.status,
                    self.http.excerpt(&answer)
                ),
            ));
        }
        Ok(wanted)
    }

    fn month_usage(
        &self,
        iccid: &str,
        month: NaiveDate,
        stats: &[Value],
    ) -> Result<Megabytes, GatewayError> {
        let (first, last) = month_bounds(month);
        let mut total = Decimal::ZERO;
        for rec in stats {
            let date = rec.get("date").and_then(Value::as_str).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::MissingField,
                    format!("usage of {iccid}: a record without date"),
                )
            })?;
            let day = date
                .get(..10)
                .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
                .ok_or_else(|| {
                    self.http.fault(
                        AnswerFault::BadValue,
                        format!("usage of {iccid}: date `{date}`"),
                    )
                })?;
            if day < first || day > last {
                continue;
            }
            let data = rec.get("data").filter(|d| d.is_object()).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::MissingField,
                    format!("usage of {iccid}: the record of {day} has no data"),
                )
            })?;
            if let Some(unit) = data
                .get("traffic_type")
                .and_then(|t| t.get("unit"))
                .and_then(Value::as_str)
                && !unit.eq_ignore_ascii_case("MB")
            {
                return Err(self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage of {iccid}: data unit `{unit}`, expected MB"),
                ));
            }
            let volume = data.get("volume").filter(|v| !v.is_null()).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::MissingField,
                    format!("usage of {iccid}: the record of {day} has no data.volume"),
                )
            })?;
            let mb = amount_of(volume).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage of {iccid}: data.volume {volume} of {day} is no plain non-negative decimal"),
                )
            })?;
            total = total.checked_add(mb).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage of {iccid}: the sum overflows"),
                )
            })?;
        }
        check_month_total(total).map_err(|e| {
            self.http
                .fault(AnswerFault::BadValue, format!("usage of {iccid}: {e}"))
        })
    }

    fn package_of(&self, iccid: &str, q: &QuotaAnswer) -> Result<CarrierPackage, GatewayError> {
        let amount = |name: &str, v: &Option<Value>| -> Result<Decimal, GatewayError> {
            let v = v.as_ref().filter(|v| !v.is_null()).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::MissingField,
                    format!("quota of {iccid}: no {name}"),
                )
            })?;
            signed_amount(v).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("quota of {iccid}: {name} {v} is no plain decimal"),
                )
            })
        };
        let left = amount("volume", &q.volume)?;
        let total = amount("total_volume", &q.total_volume)?;
        let used = total - left;
        if total < Decimal::ZERO || used < Decimal::ZERO {
            return Err(self.http.fault(
                AnswerFault::BadValue,
                format!("quota of {iccid}: volume {left} of total_volume {total}"),
            ));
        }
        let expires_at = match q.expiry_date.as_deref().filter(|s| !s.trim().is_empty()) {
            None => None,
            Some(text) => Some(parse_time(text).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("quota of {iccid}: expiry_date `{text}`"),
                )
            })?),
        };
        let stated = q
            .status
            .as_ref()
            .and_then(|s| s.get("description"))
            .and_then(Value::as_str);
        let status = match stated {
            Some(word) if word.eq_ignore_ascii_case("EXPIRED") => PackageStatus::Expired,
            Some(word)
                if word.eq_ignore_ascii_case("ACTIVE")
                    || word.eq_ignore_ascii_case("EXHAUSTED") =>
            {
                PackageStatus::Active
            }
            Some(word) => {
                return Err(self.http.fault(
                    AnswerFault::UnknownStatus,
                    format!("quota of {iccid}: status `{word}`"),
                ));
            }
            None if expires_at.is_some_and(|e| e <= self.clock.now()) => PackageStatus::Expired,
            None => PackageStatus::Active,
        };
        Ok(CarrierPackage {
            external_id: DATA_QUOTA_ID.to_owned(),
            status,
            used_mb: used,
            limit_mb: Some(total),
            activated_at: None,
            expires_at,
        })
    }
}

#[async_trait]
impl CarrierGateway for OneNce {
    async fn realname(&self, _: CarrierId, iccid: &str) -> Result<RealNameStatus, GatewayError> {
        // No KYC on 1NCE: a SIM the platform knows is verified (see the module doc).
        self.sim("realname", iccid).await?;
        Ok(RealNameStatus::Verified)
    }

    async fn usage(&self, _: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        let month = month_of(self.clock.now(), self.timezone);
        let (first, last) = month_bounds(month);
        let query = [
            ("start_dt", first.format("%Y-%m-%d").to_string()),
            ("end_dt", last.format("%Y-%m-%d").to_string()),
        ];
        let answer = self.get("usage", iccid, "/usage", &query).await?;
        let usage: UsageAnswer = self.http.json("usage", &answer)?;
        let total = self.month_usage(iccid, month, &usage.stats)?;
        Ok(MonthUsage {
            month,
            month_total_mb: total,
        })
    }

    async fn packages(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        let answer = self.get("packages", iccid, "/quota/data", &[]).await?;
        let quota: QuotaAnswer = self.http.json("packages", &answer)?;
        Ok(vec![self.package_of(iccid, &quota)?])
    }

    async fn stop(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.http
            .retry_command("stop", || {
                self.set_status("stop", iccid, NetworkStatus::Stopped)
            })
            .await
    }

    async fn start(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.http
            .retry_command("start", || {
                self.set_status("start", iccid, NetworkStatus::Online)
            })
            .await
    }

    async fn network_status(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        let sim = self.sim("network_status", iccid).await?;
        self.status_of("network_status", iccid, &sim.status)
    }

    fn batch_size(&self, _: CarrierId) -> usize {
        // The list (`GET /v1/sims`) filters by IMEI and IP address only: no call answers a
        // chosen set of cards.
        1
    }

    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        // One page of the SIM list: authenticated, read-only, and it checks the list's shape.
        self.sims_page(1).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::carriers::build_adapter;
    use domain::{CarrierLimits, CarrierProtocol, Credentials, SystemClock};
    use gateway_sim::{SimAccount, SimCardSpec, SimOptions, SimServer};

    fn account(url: String) -> CarrierAccount {
        let creds = SimAccount::default_for(CarrierProtocol::OneNce)
            .credentials
            .into_iter()
            .fold(Credentials::new(), |c, (k, v)| c.with(k, v));
        CarrierAccount {
            carrier_id: CarrierId(7),
            name: "1nce".into(),
            protocol: CarrierProtocol::OneNce,
            base_url: url,
            credentials: creds,
            limits: CarrierLimits {
                timeout_ms: 2_000,
                ..CarrierProtocol::OneNce.default_limits()
            },
            enabled: true,
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    #[test]
    fn tables_and_values() {
        assert_eq!(network_of("Enabled"), Some(NetworkStatus::Online));
        assert_eq!(network_of("Disabled"), Some(NetworkStatus::Stopped));
        assert_eq!(network_of("Suspended"), None);
        assert_eq!(
            signed_amount(&serde_json::json!(-12.5)),
            Some(Decimal::new(-125, 1))
        );
        assert_eq!(signed_amount(&serde_json::json!("1e3")), None);
        assert!(parse_time("2029-01-01T00:00:00.000Z").is_some());
        assert!(parse_time("2018-03-09T07:59:09.000+0000").is_some());
        assert!(parse_time("2029-01-01 00:00:00").is_some());
        assert!(parse_time("soon").is_none());
        let feb = NaiveDate::from_ymd_opt(2028, 2, 1).unwrap_or_default();
        assert_eq!(
            month_bounds(feb).1,
            NaiveDate::from_ymd_opt(2028, 2, 29).unwrap_or_default()
        );
    }

    /// SIM Management, "Get All SIMs": pages of up to 100 with the totals in the headers.
    #[tokio::test]
    async fn sim_management_get_all_sims_pages_of_100_with_totals() {
        let sim = SimServer::start(SimOptions::default()).await.unwrap();
        let cards: Vec<SimCardSpec> = (0..150)
            .map(|i| SimCardSpec::new(format!("898822806660{i:07}")))
            .collect();
        sim.state().upsert_cards(cards).unwrap();
        sim.state()
            .patch_card(
                "8988228066600000149",
                gateway_sim::SimCardPatch {
                    network_status: Some(NetworkStatus::Stopped),
                    ..Default::default()
                },
            )
            .unwrap();
        let ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, Arc::new(SystemClock));
        let acc = account(sim.url_of(CarrierProtocol::OneNce));
        // The concrete type, for its own method (build_adapter answers the trait object).
        let adapter = OneNce::new(&acc, &ctx).unwrap();
        assert!(build_adapter(&acc, &ctx).is_ok());

        let first = adapter.sims_page(1).await.unwrap();
        assert_eq!(first.sims.len(), 100);
        assert_eq!(
            (first.page, first.total_count, first.total_pages),
            (1, Some(150), Some(2))
        );
        assert_eq!(first.sims[0].0, "8988228066600000000");
        assert_eq!(first.sims[0].1, Ok(NetworkStatus::Online));

        let second = adapter.sims_page(2).await.unwrap();
        assert_eq!(second.sims.len(), 50);
        assert_eq!(second.page, 2);
        assert_eq!(
            second.sims.last(),
            Some(&("8988228066600000149".to_owned(), Ok(NetworkStatus::Stopped)))
        );
        assert!(adapter.sims_page(3).await.unwrap().sims.is_empty());
    }
}
