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
//! | network_status | the SIM record's `status.id` through [`wire::network_of`] |
//! | usage | `GET /api/v1/sim/{id}/stats`: `current_month.data.volume`, MB |
//! | packages | the endpoint's data quota, `GET /api/v1/endpoint/{endpoint_id}/quota/data` |
//! | stop / start | `PATCH /api/v1/sim/{id}` `{status: {id: 2}}` / `{status: {id: 1}}` → 204 |
//! | probe | `GET /api/v1/sim/status` |
//!
//! No batch call is used: `batch_size` is 1.

mod answers;
mod cards;
pub(super) mod wire;

#[cfg(test)]
mod tests;

use super::token::TokenCache;
use super::transport::{Answer, CarrierHttp};
use super::{AdapterContext, credential};
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, MonthUsage, NetworkStatus, RealNameStatus,
    Secret,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wire::{AuthAnswer, QuotaAnswer, StatusRef, jwt_exp};

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

impl Emnify {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        let application_token = credential(account, "application_token")?;
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
                _ => self.carrier_error(&answer),
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
        self.tokens
            .bearer(&self.http, call, command, || self.fetch_token(), build)
            .await?
            .map_err(|answer| {
                GatewayError::Auth(format!(
                    "emnify refused a fresh auth token on {call} (HTTP 401){}",
                    self.detail(&answer)
                ))
            })
    }

    /// `GET` of `path` under the API root.
    fn get(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.get_at(self.http.url(path), token)
    }

    /// `GET` of `url`, asking for JSON.
    fn get_at(&self, url: impl reqwest::IntoUrl, token: &str) -> reqwest::RequestBuilder {
        self.http
            .client()
            .get(url)
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
            _ => self.carrier_error(answer),
        }
    }

    /// A refusal that is not about the credentials or the card: 429 is `Throttled`, anything
    /// else a carrier error with the body's excerpt.
    fn carrier_error(&self, answer: &Answer) -> GatewayError {
        match answer.status {
            429 => GatewayError::Throttled {
                retry_after: answer.retry_after(),
            },
            status => GatewayError::Carrier {
                status,
                body: self.http.excerpt(answer),
            },
        }
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
                self.http
                    .refuse_html(&format!("{call} of SIM {id}"), &answer)?;
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
