//! China Mobile OneLink EC API v5 (`https://api.iot.10086.cn/v5/ec`). `docs/carriers/onelink.md`
//! is its page: endpoints, limits, status tables, error codes, assumptions.
//!
//! - Token: `get/token?appid&password&transid` answers `result[0].token` living
//!   `result[0].ttl` seconds. Cached ([`TokenCache`], renewed before it lapses); an answer with
//!   status `12021` (token unknown or lapsed) drops it, gets a new one and sends the request once
//!   more; a second `12021`, or a refused appid/password, is [`GatewayError::Auth`].
//! - Every request: query parameters `transid` (`appid + yyyyMMddHHmmss + 8-digit sequence`,
//!   Beijing time), `token`, and the card (`iccid`, or `iccids=a_b_c` for up to 100 cards).
//!   Answers are HTTP 200 with `{status, message, result: [...]}`, `status` `"0"` on success.
//! - Real-name: `query/sim-real-name-status` (`realNameStatus` `0`/`1`).
//! - Usage: `query/sim-data-usage`, `dataAmount` in KB (1 MB = 1024 KB) of the platform's
//!   current month (Beijing time), labelled with that month.
//! - Packages: `query/sim-data-margin`, each offering of `accmMarginList` (`offeringId`,
//!   `totalAmount`, `useAmount`, `remainAmount` in KB) as an active package.
//! - Stop / start: `change/sim-status` `operType` `0` / `1`. The platform refuses a second
//!   change of one card within minutes: [`GatewayError::ChangeLocked`], never retried at once.
//! - Network status: `query/sim-status` (`cardStatus`, both the OneLink-CT and OneLink-PB
//!   tables).
//! - Batches: the documented batch status change `change/sim-status/batch` (a job, read with
//!   `query/sim-batch-result`). The same queries on `.../batch` with `iccids=a_b_c` are
//!   *assumed* (no public source shows them): made only when the carrier's
//!   `limits.assumed_calls` names them, and turned off for good when the platform answers their
//!   path as missing. Otherwise the batch queries ask each card with its single call, and
//!   [`CarrierGateway::batch_size`] is 1 (no lane gathers cards for a call that does not exist).

mod auth;
mod batch;
#[cfg(test)]
mod tests;
mod wire;

use super::token::{Attempt, TokenCache};
use super::transport::CarrierHttp;
use super::units::month_of;
use super::{AdapterContext, credential};
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use batch::{REALNAME_BATCH, STATUS_BATCH, USAGE_BATCH};
use chrono::NaiveDate;
use domain::{
    AssumedCalls, CarrierAccount, CarrierId, CarrierPackage, Clock, MonthUsage, NetworkStatus,
    RealNameStatus, Secret,
};
use serde_json::Value;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use wire::{Reply, code};

/// Most cards one batch request may name (the documented limit of the batch calls).
pub(crate) const PLATFORM_BATCH_MAX: usize = 100;

/// The platform's time zone: its `transid` stamps and its billing month.
const PLATFORM_TZ: chrono_tz::Tz = chrono_tz::Asia::Shanghai;

pub(crate) struct OneLink {
    http: CarrierHttp,
    appid: Secret,
    password: Secret,
    tokens: TokenCache,
    clock: Arc<dyn Clock>,
    carrier: CarrierId,
    batch_size: usize,
    /// The assumed batch queries still on: the account's `assumed_calls`, less those the
    /// platform answered as missing (in this process: every node finds out on its own).
    assumed: Mutex<AssumedCalls>,
    /// The 8-digit sequence of `transid`, from a random start (several nodes share an appid).
    sequence: AtomicU32,
}

/// Written out: the token cache's own `Debug` would show the token.
impl std::fmt::Debug for OneLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneLink")
            .field("http", &self.http)
            .field("batch_size", &self.batch_size)
            .field("assumed", &self.assumed)
            .finish_non_exhaustive()
    }
}

impl OneLink {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        let batch_size = (account.limits.batch_size as usize).clamp(1, PLATFORM_BATCH_MAX);
        Ok(Self {
            http: CarrierHttp::new(account, ctx)?,
            appid: credential(account, "appid")?,
            password: credential(account, "password")?,
            tokens: TokenCache::default(),
            clock: ctx.clock.clone(),
            carrier: account.carrier_id,
            batch_size,
            assumed: Mutex::new(account.limits.assumed_calls),
            sequence: AtomicU32::new(rand::random::<u32>() % 100_000_000),
        })
    }

    /// `appid` + `yyyyMMddHHmmss` (Beijing time) + an 8-digit sequence.
    fn transid(&self) -> String {
        let n = self.sequence.fetch_add(1, Ordering::Relaxed) % 100_000_000;
        let stamp = self.clock.now().with_timezone(&PLATFORM_TZ);
        format!(
            "{}{}{n:08}",
            self.appid.expose(),
            stamp.format("%Y%m%d%H%M%S")
        )
    }

    /// The platform's billing month (Beijing time): the month its usage figures belong to.
    fn month(&self) -> NaiveDate {
        month_of(self.clock.now(), PLATFORM_TZ)
    }

    /// The API root joined with `path`, the parameters percent-encoded in the query string.
    fn url(&self, path: &str, params: &[(&str, &str)]) -> Result<reqwest::Url, GatewayError> {
        reqwest::Url::parse_with_params(&self.http.url(path), params).map_err(|e| {
            // The text of the URL may hold the password: only the parse error is told.
            GatewayError::Transport(format!("building the request URL: {e}"))
        })
    }

    // ------------------------------------------------------------ requests

    /// One request with `transid`, `token` and `params` (GET for queries, POST for changes);
    /// on `12021` the token is renewed and the request sent once more. `Ok(Err(..))`: the
    /// platform's refusal, for the caller to read.
    async fn call_raw(
        &self,
        call: &'static str,
        command: bool,
        path: &str,
        params: &[(&str, &str)],
    ) -> Result<Result<Vec<Value>, (String, String)>, GatewayError> {
        let answered = self
            .tokens
            .authed(
                || self.fetch_token(),
                |token| async move {
                    let transid = self.transid();
                    let mut query: Vec<(&str, &str)> = Vec::with_capacity(params.len() + 2);
                    query.push(("transid", transid.as_str()));
                    query.push(("token", token.as_str()));
                    query.extend_from_slice(params);
                    let url = self.url(path, &query)?;
                    let req = if command {
                        self.http.client().post(url)
                    } else {
                        self.http.client().get(url)
                    };
                    let answer = self.http.exchange(call, command, req).await?;
                    Ok(match self.read(call, &answer)? {
                        Reply::Ok(items) => Attempt::Done(Ok(items)),
                        Reply::Refused(status, message) if status == code::TOKEN => {
                            Attempt::TokenRefused(Err((status, message)))
                        }
                        Reply::Refused(status, message) => Attempt::Done(Err((status, message))),
                    })
                },
            )
            .await?;
        answered.map_err(|refused| {
            let status = refused.err().map(|(status, _)| status).unwrap_or_default();
            GatewayError::Auth(format!(
                "{call}: the platform refused a freshly issued token (OneLink status {status})"
            ))
        })
    }

    /// [`Self::call_raw`] with refusals as errors.
    async fn call(
        &self,
        call: &'static str,
        command: bool,
        path: &str,
        params: &[(&str, &str)],
    ) -> Result<Vec<Value>, GatewayError> {
        self.call_raw(call, command, path, params)
            .await?
            .map_err(|(status, message)| self.refusal(call, &status, &message))
    }

    /// An answer item that names a card must name `iccid`.
    fn check_card(&self, call: &str, item: &Value, iccid: &str) -> Result<(), GatewayError> {
        match item.get("iccid").and_then(Value::as_str) {
            Some(named) if named.trim() != iccid => Err(self.http.fault(
                AnswerFault::WrongIccid,
                format!("{call}: asked for {iccid}, the answer names {named}"),
            )),
            _ => Ok(()),
        }
    }

    /// The one item of a single-card query.
    async fn one(
        &self,
        call: &'static str,
        path: &str,
        iccid: &str,
    ) -> Result<Value, GatewayError> {
        let items = self.call(call, false, path, &[("iccid", iccid)]).await?;
        let item = self.first(call, items)?;
        self.check_card(call, &item, iccid)?;
        Ok(item)
    }

    // ------------------------------------------------------------ changes

    /// A single-card change to `target` within the command's retry loop (a refusal by the
    /// change lock is never retried at once).
    async fn change(
        &self,
        call: &'static str,
        iccid: &str,
        target: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        self.http
            .retry_command(call, || self.change_once(call, iccid, target))
            .await
    }

    /// One single-card change (`operType` `0` stop, `1` resume); the status after it. A card
    /// already in the wanted status is refused by the platform (`12035`): then its status is
    /// read, and the change is done when it is the one wanted.
    async fn change_once(
        &self,
        call: &'static str,
        iccid: &str,
        target: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        let oper = match target {
            NetworkStatus::Stopped => "0",
            NetworkStatus::Online => "1",
        };
        let params = [("iccid", iccid), ("operType", oper)];
        match self
            .call_raw(call, true, "/change/sim-status", &params)
            .await?
        {
            Ok(items) => {
                if let Some(item) = items.first() {
                    self.check_card(call, item, iccid)?;
                }
                Ok(target)
            }
            Err((status, message)) if status == code::STATE => {
                let now = self.status_of(iccid).await?;
                if now == target {
                    Ok(target)
                } else {
                    Err(self.refusal(call, &status, &message))
                }
            }
            Err((status, message)) => Err(self.refusal(call, &status, &message)),
        }
    }

    async fn status_of(&self, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        let item = self
            .one("network_status", "/query/sim-status", iccid)
            .await?;
        self.network_of("network_status", &item)
    }
}

#[async_trait]
impl CarrierGateway for OneLink {
    async fn realname(&self, _: CarrierId, iccid: &str) -> Result<RealNameStatus, GatewayError> {
        let item = self
            .one("realname", "/query/sim-real-name-status", iccid)
            .await?;
        self.realname_of("realname", &item)
    }

    async fn usage(&self, _: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        let month = self.month();
        let item = self.one("usage", "/query/sim-data-usage", iccid).await?;
        self.usage_of("usage", &item, month)
    }

    async fn packages(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        let item = self
            .one("packages", "/query/sim-data-margin", iccid)
            .await?;
        self.packages_of(&item)
    }

    async fn stop(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.change("stop", iccid, NetworkStatus::Stopped).await
    }

    async fn start(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.change("start", iccid, NetworkStatus::Online).await
    }

    async fn network_status(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        self.status_of(iccid).await
    }

    /// The configured batch size while an assumed batch query is on; 1 when none is (the
    /// queries then go card by card, and gathering cards for them would only delay them).
    fn batch_size(&self, _: CarrierId) -> usize {
        if self.any_assumed_on() {
            self.batch_size
        } else {
            1
        }
    }

    async fn realname_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<RealNameStatus, GatewayError>>, GatewayError> {
        self.query_many(
            &REALNAME_BATCH,
            iccids,
            |item| self.realname_of("realname", item),
            |iccid| async move {
                let item = self
                    .one("realname", "/query/sim-real-name-status", iccid)
                    .await?;
                self.realname_of("realname", &item)
            },
        )
        .await
    }

    async fn usage_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
        let month = self.month();
        self.query_many(
            &USAGE_BATCH,
            iccids,
            |item| self.usage_of("usage", item, month),
            |iccid| async move {
                let item = self.one("usage", "/query/sim-data-usage", iccid).await?;
                self.usage_of("usage", &item, month)
            },
        )
        .await
    }

    async fn network_status_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<NetworkStatus, GatewayError>>, GatewayError> {
        self.query_many(
            &STATUS_BATCH,
            iccids,
            |item| self.network_of("network_status", item),
            |iccid| self.status_of(iccid),
        )
        .await
    }

    /// A fresh `get/token`: the platform checks the appid and password and answers its
    /// documented envelope. Harmless: a token is all it issues.
    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        self.fetch_token().await.map(|_| ())
    }
}
