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
//!   ([`OneNce::sims_page`] reads the list a page at a time, with the totals of its headers;
//!   the record sync reads the whole list that way, `sync_page`).

mod list;
mod usage;
mod wire;

#[cfg(test)]
mod tests;

use super::token::TokenCache;
use super::transport::{Answer, CarrierHttp};
use super::units::month_of;
use super::{AdapterContext, credential};
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, MonthUsage, NetworkStatus, RealNameStatus,
};
use std::sync::Arc;
use std::time::Duration;
use wire::{
    QuotaAnswer, SimAnswer, TokenAnswer, UsageAnswer, escape, month_bounds, network_of,
    refuses_credentials, with_query, word_of,
};

/// `expires_in` when the token answer does not say (the documented default).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// The `external_id` of the SIM's data quota (1NCE's v1 quota has no id of its own).
pub(crate) const DATA_QUOTA_ID: &str = "data-quota";

#[derive(Debug)]
pub(crate) struct OneNce {
    http: CarrierHttp,
    client_id: domain::Secret,
    client_secret: domain::Secret,
    tokens: TokenCache,
    timezone: chrono_tz::Tz,
    clock: Arc<dyn Clock>,
}

impl OneNce {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        Ok(Self {
            client_id: credential(account, "client_id")?,
            client_secret: credential(account, "client_secret")?,
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
            .basic_auth(self.client_id.expose(), Some(self.client_secret.expose()))
            .header(reqwest::header::ACCEPT, "application/json")
            .json(&serde_json::json!({"grant_type": "client_credentials"}));
        let answer = self.http.query("token", req).await?;
        match answer.status {
            200..=299 => {}
            401 | 403 => return Err(self.credentials_refused(&answer)),
            400 if refuses_credentials(&answer.body) => {
                return Err(self.credentials_refused(&answer));
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

    fn credentials_refused(&self, answer: &Answer) -> GatewayError {
        GatewayError::Auth(format!(
            "1NCE refused the client credentials (HTTP {}): {}",
            answer.status,
            self.http.excerpt(answer)
        ))
    }

    /// One Bearer request, `method` on `url` with `body` as JSON when given (a `PUT` is a
    /// command, a `GET` a query): sent, and on 401 sent once more with a renewed token (the token
    /// expired mid-run); a second 401 is `Auth`. Success only: any other answer is its
    /// [`Self::failure`].
    async fn call(
        &self,
        call: &'static str,
        method: reqwest::Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, GatewayError> {
        let command = method != reqwest::Method::GET;
        let build = |token: &str| {
            let req = self.http.client().request(method.clone(), url);
            let req = match body {
                Some(body) => req.json(body),
                None => req,
            };
            req.bearer_auth(token)
                .header(reqwest::header::ACCEPT, "application/json")
        };
        let answer = self
            .tokens
            .bearer(&self.http, call, command, || self.fetch_token(), build)
            .await?
            .map_err(|answer| {
                GatewayError::Auth(format!(
                    "1NCE refused a newly issued access token (HTTP 401): {}",
                    self.http.excerpt(&answer)
                ))
            })?;
        if answer.is_success() {
            Ok(answer)
        } else {
            Err(self.failure(&answer))
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

    /// A GET of `url`, success only.
    async fn get_url(&self, call: &'static str, url: &str) -> Result<Answer, GatewayError> {
        self.call(call, reqwest::Method::GET, url, None).await
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
        self.get_url(call, &url).await
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

    /// `PUT /v1/sims/{iccid}` with the wanted status, retried as a command; the status after it.
    async fn switch(
        &self,
        call: &'static str,
        iccid: &str,
        wanted: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        self.http
            .retry_command(call, || self.set_status(call, iccid, wanted))
            .await
    }

    /// One `PUT /v1/sims/{iccid}` with the wanted status; the status after it.
    async fn set_status(
        &self,
        call: &'static str,
        iccid: &str,
        wanted: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        let url = self.http.url(&Self::sim_path(iccid, ""));
        let body = serde_json::json!({"iccid": iccid, "status": word_of(wanted)});
        let answer = self
            .call(call, reqwest::Method::PUT, &url, Some(&body))
            .await?;
        // The documented answer is empty; a page from a proxy is not an acceptance.
        self.http.refuse_html(call, &answer)?;
        Ok(wanted)
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
        let answer = match self.get("packages", iccid, "/quota/data", &[]).await {
            Ok(answer) => answer,
            // "No data quota found": a SIM without a quota has no package, an unknown SIM is
            // unknown. Which of the two, the SIM itself says (one more request, only then).
            Err(GatewayError::NotFound) => {
                self.sim("packages", iccid).await?;
                return Ok(Vec::new());
            }
            Err(e) => return Err(e),
        };
        let quota: QuotaAnswer = self.http.json("packages", &answer)?;
        Ok(vec![self.package_of(iccid, &quota)?])
    }

    async fn stop(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.switch("stop", iccid, NetworkStatus::Stopped).await
    }

    async fn start(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.switch("start", iccid, NetworkStatus::Online).await
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

    async fn sync_page(
        &self,
        _: CarrierId,
        _since: chrono::DateTime<chrono::Utc>,
        page: u32,
    ) -> Result<domain::SyncPage, GatewayError> {
        self.listing(page).await
    }

    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        // One page of the SIM list: authenticated, read-only, and it checks the list's shape.
        self.sims_page(1).await.map(|_| ())
    }
}
