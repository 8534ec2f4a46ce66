//! emnify REST API (`docs/carriers/emnify.md`).
//!
//! Auth: the account's `application_token` is exchanged for a JWT (`POST /api/v1/authenticate`
//! → `{auth_token}`), sent as `Authorization: Bearer`. The JWT's `exp` claim (read, not
//! verified: the platform verifies it) says when to renew; without one the documented 240
//! minutes are assumed. A 401 drops the token and the call is made once more with a new one; a
//! second 401 is [`GatewayError::Auth`].
//!
//! Cards: emnify addresses a SIM by its own numeric id. The adapter finds it by ICCID through
//! the SIM list filter (`q=iccid_with_luhn:<iccid>` for a 20-character ICCID, `q=iccid:<iccid>`
//! otherwise: emnify's `iccid` lacks the Luhn digit) and keeps ICCID → id in memory; a 404 on a
//! remembered id forgets it and looks the card up once more.
//!
//! | call | request |
//! | --- | --- |
//! | realname | the SIM record (emnify has no real-name check: a known SIM is `Verified`) |
//! | network_status | the SIM record's `status.id` through [`network_of`] |
//! | usage | `GET /api/v1/sim/{id}/stats`: `current_month.data.volume`, MB |
//! | packages | the endpoint's data quota, `GET /api/v1/endpoint/{endpoint_id}/quota/data` |
//! | stop / start | `PATCH /api/v1/sim/{id}` `{status: {id: 2}}` / `{status: {id: 1}}` → 204 |
//! | probe | `GET /api/v1/sim/status` |
//!
//! No batch call is used: `batch_size` is 1.

use super::AdapterContext;
use super::token::TokenCache;
use super::transport::{Answer, CarrierHttp};
use super::units;
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, MonthUsage, NetworkStatus, PackageStatus,
    RealNameStatus, Secret,
};
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The auth token's lifetime when its `exp` cannot be read: 240 minutes (emnify's
/// authentication page).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(240 * 60);
/// An `exp` further away than this (a skewed clock) is not believed.
const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// ICCID → SIM id entries kept; beyond, the map starts again (each card costs one lookup).
const ID_CACHE_MAX: usize = 500_000;
/// emnify has no batch query we use: one card a call.
const PLATFORM_BATCH_MAX: usize = 1;
/// Items per page of a lookup: one SIM is expected.
const LOOKUP_PER_PAGE: &str = "10";

pub(crate) struct Emnify {
    http: CarrierHttp,
    application_token: Secret,
    tokens: TokenCache,
    /// ICCID → emnify SIM id.
    ids: Mutex<HashMap<String, u64>>,
    clock: Arc<dyn Clock>,
    timezone: chrono_tz::Tz,
    batch: usize,
}

impl std::fmt::Debug for Emnify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emnify")
            .field("http", &self.http)
            .field("timezone", &self.timezone)
            .finish_non_exhaustive()
    }
}

/// The SIM status table (`GET /api/v1/sim/status`, "SIM lifecycle"): what the card's network
/// service is in our words. Anything else is not understood.
pub(crate) fn network_of(status_id: i64) -> Option<NetworkStatus> {
    match status_id {
        0 => Some(NetworkStatus::Stopped), // Issued: not yet able to attach
        1 => Some(NetworkStatus::Online),  // Activated
        2 => Some(NetworkStatus::Stopped), // Suspended
        3 => Some(NetworkStatus::Stopped), // Deleted
        4 => Some(NetworkStatus::Online),  // Factory Test: attaches within its test volume
        _ => None,
    }
}

/// The data quota status table (`GET /api/v1/endpoint/{id}/quota/data`).
fn quota_status_of(id: i64) -> Option<(PackageStatus, &'static str)> {
    match id {
        1 => Some((PackageStatus::Active, "ACTIVE")),
        // Used up but still the endpoint's quota until it expires.
        2 => Some((PackageStatus::Active, "EXHAUSTED")),
        3 => Some((PackageStatus::Expired, "EXPIRED")),
        _ => None,
    }
}

/// emnify's status ids come as numbers, the quota's sometimes as strings (`"1"`).
fn id_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[derive(Debug, Deserialize)]
struct StatusRef {
    id: Value,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Deserialize)]
struct EndpointRef {
    #[serde(default)]
    id: Option<u64>,
}

/// The fields of a SIM object the adapter reads.
#[derive(Debug, Deserialize)]
struct SimRecord {
    id: u64,
    #[serde(default)]
    iccid: Option<String>,
    #[serde(default)]
    iccid_with_luhn: Option<String>,
    status: StatusRef,
    #[serde(default)]
    endpoint: Option<EndpointRef>,
}

impl SimRecord {
    fn names(&self, iccid: &str) -> bool {
        self.iccid.as_deref() == Some(iccid) || self.iccid_with_luhn.as_deref() == Some(iccid)
    }

    fn shown_iccid(&self) -> &str {
        self.iccid_with_luhn
            .as_deref()
            .or(self.iccid.as_deref())
            .unwrap_or("none")
    }
}

#[derive(Debug, Deserialize)]
struct AuthAnswer {
    #[serde(default)]
    auth_token: Option<String>,
}

#[derive(Debug, Deserialize)]
struct QuotaAnswer {
    status: StatusRef,
    #[serde(default)]
    volume: Value,
    #[serde(default)]
    last_volume_added: Value,
    #[serde(default)]
    expiry_date: Value,
}

/// A figure as emnify writes it: a JSON number (a double, so possibly in exponent form, as a
/// JVM writes small doubles) or a string. `None`: not a non-negative decimal.
fn figure(v: &Value) -> Option<Decimal> {
    let text = match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.trim().to_owned(),
        _ => return None,
    };
    if text.contains(['e', 'E']) {
        let d = Decimal::from_scientific(&text).ok()?;
        (d >= Decimal::ZERO).then_some(d)
    } else {
        units::parse_amount(&text)
    }
}

/// An emnify timestamp: ISO 8601 (`2019-01-31T00:00:00.000+0000` or RFC 3339), or a date.
fn timestamp(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Some(d.with_timezone(&Utc));
    }
    for f in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%dT%H:%M:%S%z"] {
        if let Ok(d) = DateTime::parse_from_str(t, f) {
            return Some(d.with_timezone(&Utc));
        }
    }
    for f in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, f) {
            return Some(d.and_utc());
        }
    }
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc())
}

/// Base64url (with or without padding) to bytes.
fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The `exp` claim (unix seconds) of a JWT, unverified.
fn jwt_exp(token: &str) -> Option<i64> {
    let payload = token.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&b64url_decode(payload)?).ok()?;
    id_of(claims.get("exp")?)
}

impl Emnify {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        let application_token = account
            .credentials
            .get("application_token")
            .filter(|s| !s.is_empty())
            .cloned()
            .ok_or_else(|| {
                GatewayError::Auth("emnify needs credentials field `application_token`".into())
            })?;
        Ok(Self {
            http: CarrierHttp::new(account, ctx)?,
            application_token,
            tokens: TokenCache::default(),
            ids: Mutex::new(HashMap::new()),
            clock: ctx.clock.clone(),
            timezone: ctx.timezone,
            batch: (account.limits.batch_size as usize).clamp(1, PLATFORM_BATCH_MAX),
        })
    }

    // -- auth ------------------------------------------------------------------------------

    /// `POST /api/v1/authenticate` with the application token: the JWT and how long to use it.
    async fn fetch_token(&self) -> Result<(String, Duration), GatewayError> {
        let req = self
            .http
            .client()
            .post(self.http.url("/api/v1/authenticate"))
            .json(&json!({ "application_token": self.application_token.expose() }));
        let answer = self.http.query("auth", req).await?;
        if !answer.is_success() {
            return Err(match answer.status {
                401 | 403 => GatewayError::Auth(format!(
                    "emnify refused the application token (HTTP {}){}",
                    answer.status,
                    self.detail(&answer)
                )),
                429 => GatewayError::Throttled {
                    retry_after: answer.retry_after(),
                },
                status => GatewayError::Carrier {
                    status,
                    body: self.http.excerpt(&answer),
                },
            });
        }
        let auth: AuthAnswer = self.http.json("authenticate", &answer)?;
        let token = auth.auth_token.filter(|t| !t.is_empty()).ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                "authenticate: the answer carries no auth_token",
            )
        })?;
        self.http.add_secret(&token);
        Ok((token.clone(), self.lifetime_of(&token)))
    }

    /// Until the JWT's `exp` by our clock (bounded), else the documented 240 minutes.
    fn lifetime_of(&self, token: &str) -> Duration {
        match jwt_exp(token) {
            Some(exp) => {
                let left = exp.saturating_sub(self.clock.now().timestamp());
                Duration::from_secs(u64::try_from(left).unwrap_or(0)).min(MAX_TOKEN_LIFETIME)
            }
            None => DEFAULT_TOKEN_LIFETIME,
        }
    }

    /// `: <body>` when the answer has a body, for an error text (scrubbed).
    fn detail(&self, answer: &Answer) -> String {
        let e = self.http.excerpt(answer);
        if e.trim().is_empty() {
            String::new()
        } else {
            format!(": {e}")
        }
    }

    /// One authenticated request: a 401 drops the token and the request goes once more with a
    /// new one; a second 401 is `Auth`. Any other answer comes back as it is.
    async fn send<F>(
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
            let token = self.tokens.get(|| self.fetch_token()).await?;
            let req = build(&token);
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
                    "emnify refused a fresh auth token on {call} (HTTP 401){}",
                    self.detail(&answer)
                )));
            }
            renewed = true;
        }
    }

    fn get(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.http
            .client()
            .get(self.http.url(path))
            .bearer_auth(token)
            .header(reqwest::header::ACCEPT, "application/json")
    }

    /// A non-success answer in our words.
    fn refused(&self, call: &str, answer: &Answer) -> GatewayError {
        match answer.status {
            403 => GatewayError::Auth(format!(
                "emnify forbids {call} to these credentials (HTTP 403){}",
                self.detail(answer)
            )),
            404 => GatewayError::NotFound,
            429 => GatewayError::Throttled {
                retry_after: answer.retry_after(),
            },
            status => GatewayError::Carrier {
                status,
                body: self.http.excerpt(answer),
            },
        }
    }

    // -- cards -----------------------------------------------------------------------------

    fn cached(&self, iccid: &str) -> Option<u64> {
        self.ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(iccid)
            .copied()
    }

    fn remember(&self, iccid: &str, id: u64) {
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        if ids.len() >= ID_CACHE_MAX {
            ids.clear();
        }
        ids.insert(iccid.to_owned(), id);
    }

    fn forget(&self, iccid: &str) {
        self.ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(iccid);
    }

    /// Finds the SIM by ICCID through the list filter and remembers its id.
    async fn lookup(&self, call: &'static str, iccid: &str) -> Result<SimRecord, GatewayError> {
        let field = if iccid.len() == 20 {
            "iccid_with_luhn"
        } else {
            "iccid"
        };
        let q = format!("{field}:{iccid}");
        let url = reqwest::Url::parse_with_params(
            &self.http.url("/api/v1/sim"),
            &[
                ("q", q.as_str()),
                ("page", "1"),
                ("per_page", LOOKUP_PER_PAGE),
            ],
        )
        .map_err(|e| GatewayError::Transport(format!("SIM lookup URL: {e}")))?;
        let answer = self
            .send(call, false, |t| {
                self.http
                    .client()
                    .get(url.clone())
                    .bearer_auth(t)
                    .header(reqwest::header::ACCEPT, "application/json")
            })
            .await?;
        if !answer.is_success() {
            return Err(self.refused(call, &answer));
        }
        let sims: Vec<SimRecord> = self.http.json("SIM lookup", &answer)?;
        let Some(pos) = sims.iter().position(|s| s.names(iccid)) else {
            return Err(match sims.first() {
                None => GatewayError::NotFound,
                Some(other) => self.http.fault(
                    AnswerFault::WrongIccid,
                    format!(
                        "SIM lookup of {iccid} answered {} SIM(s), none of them it (first: {})",
                        sims.len(),
                        other.shown_iccid()
                    ),
                ),
            });
        };
        let sim = sims.into_iter().nth(pos).ok_or(GatewayError::NotFound)?;
        self.remember(iccid, sim.id);
        Ok(sim)
    }

    /// The SIM record: `GET /api/v1/sim/{id}` when the id is known, else the lookup.
    async fn read_sim(&self, call: &'static str, iccid: &str) -> Result<SimRecord, GatewayError> {
        if let Some(id) = self.cached(iccid) {
            let path = format!("/api/v1/sim/{id}");
            let answer = self.send(call, false, |t| self.get(&path, t)).await?;
            if answer.status == 404 {
                // Deleted, or not the id we thought: ask by ICCID once more.
                self.forget(iccid);
            } else if !answer.is_success() {
                return Err(self.refused(call, &answer));
            } else {
                let sim: SimRecord = self.http.json("SIM", &answer)?;
                if !sim.names(iccid) {
                    self.forget(iccid);
                    return Err(self.http.fault(
                        AnswerFault::WrongIccid,
                        format!(
                            "SIM {id} of {iccid} answered for ICCID {}",
                            sim.shown_iccid()
                        ),
                    ));
                }
                return Ok(sim);
            }
        }
        self.lookup(call, iccid).await
    }

    /// A request about the SIM of `iccid`, by its id; a 404 on a remembered id forgets it, looks
    /// the card up again and asks once more.
    async fn on_sim<F>(
        &self,
        call: &'static str,
        iccid: &str,
        command: bool,
        build: F,
    ) -> Result<(u64, Answer), GatewayError>
    where
        F: Fn(&str, u64) -> reqwest::RequestBuilder,
    {
        let cached = self.cached(iccid);
        let id = match cached {
            Some(id) => id,
            None => self.lookup(call, iccid).await?.id,
        };
        let answer = self.send(call, command, |t| build(t, id)).await?;
        if answer.status == 404 && cached.is_some() {
            self.forget(iccid);
            let id = self.lookup(call, iccid).await?.id;
            let answer = self.send(call, command, |t| build(t, id)).await?;
            return Ok((id, answer));
        }
        Ok((id, answer))
    }

    /// The network status a SIM record says, through the status table.
    fn network_status_of(&self, sim: &SimRecord) -> Result<NetworkStatus, GatewayError> {
        id_of(&sim.status.id).and_then(network_of).ok_or_else(|| {
            self.http.fault(
                AnswerFault::UnknownStatus,
                format!(
                    "SIM {} has status {} ({}), outside the documented table",
                    sim.id,
                    sim.status.id,
                    sim.status
                        .description
                        .as_deref()
                        .unwrap_or("no description")
                ),
            )
        })
    }

    // -- usage -----------------------------------------------------------------------------

    /// `current_month.data` of the statistics answer of SIM `id`.
    fn month_usage(&self, id: u64, v: &Value) -> Result<MonthUsage, GatewayError> {
        let now_month = units::month_of(self.clock.now(), self.timezone);
        // The reference shows the statistics both as an object and as a one-item array.
        let obj = match v {
            Value::Array(items) => items.first(),
            other => Some(other),
        }
        .and_then(Value::as_object)
        .filter(|o| {
            ["current_month", "last_month", "last_hour"]
                .iter()
                .any(|k| o.contains_key(*k))
        })
        .ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("usage of SIM {id}: the statistics answer holds no period"),
            )
        })?;
        // "current_month is only included if traffic exists": none yet this month.
        let Some(data) = obj
            .get("current_month")
            .and_then(|c| c.get("data"))
            .filter(|d| !d.is_null())
        else {
            return Ok(MonthUsage {
                month: now_month,
                month_total_mb: Decimal::ZERO,
            });
        };
        if let Some(sim_id) = data.get("sim_id").filter(|s| !s.is_null())
            && figure(sim_id) != Some(Decimal::from(id))
        {
            return Err(self.http.fault(
                AnswerFault::WrongIccid,
                format!("usage of SIM {id} answered for SIM {sim_id}"),
            ));
        }
        if let Some(unit) = data
            .get("traffic_type")
            .and_then(|t| t.get("unit"))
            .and_then(Value::as_str)
            && !unit.eq_ignore_ascii_case("MB")
        {
            return Err(self.http.fault(
                AnswerFault::BadValue,
                format!("usage of SIM {id}: data in `{unit}`, not MB"),
            ));
        }
        let volume = match data.get("volume") {
            None | Some(Value::Null) => {
                return Err(self.http.fault(
                    AnswerFault::MissingField,
                    format!("usage of SIM {id}: current_month.data has no volume"),
                ));
            }
            Some(v) => figure(v).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage of SIM {id}: volume {v} is not a non-negative decimal"),
                )
            })?,
        };
        let volume = units::check_month_total(volume)
            .map_err(|e| self.http.fault(AnswerFault::BadValue, e))?;
        let month = match data.get("month").and_then(Value::as_str) {
            Some(m) => m.get(..7).and_then(units::parse_month).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage of SIM {id}: month `{m}` is no date"),
                )
            })?,
            None => now_month,
        };
        Ok(MonthUsage {
            month,
            month_total_mb: volume,
        })
    }

    // -- packages --------------------------------------------------------------------------

    fn package_of(
        &self,
        endpoint: u64,
        quota: &QuotaAnswer,
    ) -> Result<CarrierPackage, GatewayError> {
        let status_id = id_of(&quota.status.id);
        let (status, word) = status_id.and_then(quota_status_of).ok_or_else(|| {
            self.http.fault(
                AnswerFault::UnknownStatus,
                format!(
                    "data quota of endpoint {endpoint} has status {}, outside the documented table",
                    quota.status.id
                ),
            )
        })?;
        if let Some(d) = &quota.status.description
            && !d.eq_ignore_ascii_case(word)
        {
            return Err(self.http.fault(
                AnswerFault::UnknownStatus,
                format!(
                    "data quota of endpoint {endpoint}: status {} is `{d}`, the table says `{word}`",
                    quota.status.id
                ),
            ));
        }
        let bad = |what: &str, v: &Value| {
            self.http.fault(
                AnswerFault::BadValue,
                format!(
                    "data quota of endpoint {endpoint}: {what} {v} is not a non-negative decimal"
                ),
            )
        };
        let left = match &quota.volume {
            Value::Null => {
                return Err(self.http.fault(
                    AnswerFault::MissingField,
                    format!("data quota of endpoint {endpoint} has no volume"),
                ));
            }
            v => figure(v).ok_or_else(|| bad("volume", v))?,
        };
        let added = match &quota.last_volume_added {
            Value::Null => None,
            v => Some(figure(v).ok_or_else(|| bad("last_volume_added", v))?),
        };
        let limit = added.map(|a| a.max(left));
        let used = limit.map_or(Decimal::ZERO, |l| l - left);
        let expires_at = match &quota.expiry_date {
            Value::Null => None,
            Value::String(s) => Some(timestamp(s).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("data quota of endpoint {endpoint}: expiry_date `{s}` is no time"),
                )
            })?),
            other => {
                return Err(self.http.fault(
                    AnswerFault::BadValue,
                    format!("data quota of endpoint {endpoint}: expiry_date {other} is no time"),
                ));
            }
        };
        Ok(CarrierPackage {
            external_id: format!("data-quota:{endpoint}"),
            status,
            used_mb: used,
            limit_mb: limit,
            activated_at: None,
            expires_at,
        })
    }

    // -- stop / start ----------------------------------------------------------------------

    async fn set_status(
        &self,
        call: &'static str,
        iccid: &str,
        status_id: u8,
        after: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        self.http
            .retry_command(call, || async {
                let body = json!({ "status": { "id": status_id } });
                let (id, answer) = self
                    .on_sim(call, iccid, true, |t, id| {
                        self.http
                            .client()
                            .patch(self.http.url(&format!("/api/v1/sim/{id}")))
                            .bearer_auth(t)
                            .json(&body)
                    })
                    .await?;
                if !answer.is_success() {
                    return Err(self.refused(call, &answer));
                }
                if answer.looks_like_html() {
                    return Err(self.http.fault(
                        AnswerFault::NotJson,
                        format!(
                            "{call} of SIM {id}: an HTML page (HTTP {}): {}",
                            answer.status,
                            self.http.excerpt(&answer)
                        ),
                    ));
                }
                Ok(after)
            })
            .await
    }
}

#[async_trait]
impl CarrierGateway for Emnify {
    /// emnify has no real-name (KYC) check: a SIM the platform knows, with a status in the
    /// table, is `Verified`, so that no card is stopped for a check that does not exist. An
    /// unknown card is `NotFound`.
    async fn realname(&self, _: CarrierId, iccid: &str) -> Result<RealNameStatus, GatewayError> {
        let sim = self.read_sim("realname", iccid).await?;
        self.network_status_of(&sim)?;
        Ok(RealNameStatus::Verified)
    }

    async fn usage(&self, _: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        let (id, answer) = self
            .on_sim("usage", iccid, false, |t, id| {
                self.get(&format!("/api/v1/sim/{id}/stats"), t)
            })
            .await?;
        if !answer.is_success() {
            return Err(self.refused("usage", &answer));
        }
        let v: Value = self.http.json("SIM statistics", &answer)?;
        self.month_usage(id, &v)
    }

    /// The data quota of the SIM's endpoint as one package; no endpoint or no quota: none.
    async fn packages(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        let sim = self.read_sim("packages", iccid).await?;
        let Some(endpoint) = sim.endpoint.as_ref().and_then(|e| e.id) else {
            return Ok(Vec::new());
        };
        let path = format!("/api/v1/endpoint/{endpoint}/quota/data");
        let answer = self.send("packages", false, |t| self.get(&path, t)).await?;
        if answer.status == 404 {
            // The endpoint came from the SIM just read: a 404 is "no quota set".
            return Ok(Vec::new());
        }
        if !answer.is_success() {
            return Err(self.refused("packages", &answer));
        }
        let quota: QuotaAnswer = self.http.json("data quota", &answer)?;
        Ok(vec![self.package_of(endpoint, &quota)?])
    }

    async fn stop(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.set_status("stop", iccid, 2, NetworkStatus::Stopped)
            .await
    }

    async fn start(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.set_status("start", iccid, 1, NetworkStatus::Online)
            .await
    }

    async fn network_status(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        let sim = self.read_sim("network_status", iccid).await?;
        self.network_status_of(&sim)
    }

    fn batch_size(&self, _: CarrierId) -> usize {
        self.batch
    }

    /// Authenticates (when no token is held) and reads the SIM status table.
    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        let answer = self
            .send("probe", false, |t| self.get("/api/v1/sim/status", t))
            .await?;
        if !answer.is_success() {
            return Err(self.refused("probe", &answer));
        }
        let statuses: Vec<StatusRef> = self.http.json("SIM statuses", &answer)?;
        if statuses.is_empty() {
            return Err(self.http.fault(
                AnswerFault::MissingField,
                "probe: the SIM status table is empty",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn figures_are_read_exactly_even_in_exponent_form() {
        let v: Value = serde_json::from_str("100.5").unwrap();
        assert_eq!(figure(&v), Some(dec!(100.5)));
        let v: Value = serde_json::from_str("9.5367431640625E-7").unwrap();
        assert_eq!(figure(&v), Some(dec!(0.00000095367431640625)));
        assert_eq!(
            figure(&Value::String("0.0009765625".into())),
            Some(dec!(0.0009765625))
        );
        assert_eq!(figure(&Value::String("-1".into())), None);
        assert_eq!(figure(&Value::String("abc".into())), None);
        assert_eq!(figure(&Value::Null), None);
    }

    #[test]
    fn the_status_tables_are_explicit() {
        assert_eq!(network_of(1), Some(NetworkStatus::Online));
        assert_eq!(network_of(2), Some(NetworkStatus::Stopped));
        assert_eq!(network_of(0), Some(NetworkStatus::Stopped));
        assert_eq!(network_of(3), Some(NetworkStatus::Stopped));
        assert_eq!(network_of(4), Some(NetworkStatus::Online));
        assert_eq!(network_of(5), None);
        assert_eq!(
            quota_status_of(3).map(|s| s.0),
            Some(PackageStatus::Expired)
        );
        assert_eq!(quota_status_of(0), None);
        assert_eq!(id_of(&Value::String("2".into())), Some(2));
    }

    #[test]
    fn the_jwt_exp_is_read_without_verifying() {
        // {"alg":"HS256"} . {"exp":1700000000} . sig
        let token = "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2ln";
        assert_eq!(jwt_exp(token), Some(1_700_000_000));
        assert_eq!(jwt_exp("opaque"), None);
    }

    #[test]
    fn emnify_timestamps_parse() {
        let want = chrono::TimeZone::with_ymd_and_hms(&Utc, 2019, 1, 31, 0, 0, 0).unwrap();
        assert_eq!(timestamp("2019-01-31T00:00:00.000+0000"), Some(want));
        assert_eq!(timestamp("2019-01-31T00:00:00Z"), Some(want));
        assert_eq!(timestamp("2019-01-31"), Some(want));
        assert_eq!(timestamp("soon"), None);
    }
}
