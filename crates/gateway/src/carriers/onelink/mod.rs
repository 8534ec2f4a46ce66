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
//! - Batches: the same queries on `.../batch` with `iccids=a_b_c`, and the batch status change
//!   `change/sim-status/batch` (a job, read with `query/sim-batch-result`).

use super::AdapterContext;
use super::token::TokenCache;
use super::transport::{Answer, CarrierHttp};
use super::units::{amount_of, check_month_total, kb_to_mb, month_of};
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use chrono::NaiveDate;
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, Megabytes, MonthUsage, NetworkStatus,
    PackageStatus, RealNameStatus, Secret,
};
use rust_decimal::prelude::ToPrimitive;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Most cards one batch request may name (the documented limit of the batch calls).
pub(crate) const PLATFORM_BATCH_MAX: usize = 100;

/// The platform's time zone: its `transid` stamps and its billing month.
const PLATFORM_TZ: chrono_tz::Tz = chrono_tz::Asia::Shanghai;

/// A token's lifetime when the answer does not say (`ttl` absent).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// The `Retry-After` hint of a change refused by the lock: the window the simulator and our
/// default assume (the platform does not say how much of it is left).
const CHANGE_LOCK_HINT: Duration = Duration::from_secs(300);

/// When the platform's own rate limit answers: its limits are per second.
const THROTTLE_HINT: Duration = Duration::from_secs(1);

/// The envelope's `status` codes (`docs/carriers/onelink.md`, "Error codes").
mod code {
    pub(super) const OK: &str = "0";
    pub(super) const AUTH: &str = "12001";
    pub(super) const TRANSID: &str = "12002";
    pub(super) const THROTTLED: &str = "12010";
    pub(super) const TOKEN: &str = "12021";
    pub(super) const TOO_MANY: &str = "12034";
    pub(super) const STATE: &str = "12035";
    pub(super) const LOCKED: &str = "12036";
    pub(super) const PARAM: &str = "12100";
    pub(super) const NO_JOB: &str = "12200";
    pub(super) const NO_CARD: &str = "11011";
}

pub(crate) struct OneLink {
    http: CarrierHttp,
    appid: Secret,
    password: Secret,
    tokens: TokenCache,
    clock: Arc<dyn Clock>,
    batch_size: usize,
    /// The 8-digit sequence of `transid`, from a random start (several nodes share an appid).
    sequence: AtomicU32,
}

/// Written out: the token cache's own `Debug` would show the token.
impl std::fmt::Debug for OneLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneLink")
            .field("http", &self.http)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

/// A batch status change the platform accepted: its job and what it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchChange {
    pub(crate) job_id: String,
    pub(crate) iccids: Vec<String>,
    pub(crate) target: NetworkStatus,
}

/// Where a batch status change stands (`query/sim-batch-result`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchChangeState {
    /// `jobStatus` `0` (waiting) or `1` (in progress): ask again later.
    Pending,
    /// `jobStatus` `2` or `3`: per card, in the order of [`BatchChange::iccids`], the status
    /// after the change, or why it failed (a card the result does not name is
    /// [`GatewayError::MissingFromBatch`]).
    Done(Vec<Result<NetworkStatus, GatewayError>>),
}

/// The answer envelope.
#[derive(Debug, Deserialize)]
struct Envelope {
    status: Value,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    result: Option<Value>,
}

/// A decoded answer: the result list, or the platform's refusal (`status`, `message`).
enum Reply {
    Ok(Vec<Value>),
    Refused(String, String),
}

/// A JSON string or number as text.
fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `cardStatus` → ours. OneLink-CT: `1` 待激活, `2` 已激活, `4` 停机, `6` 可测试, `7` 库存,
/// `8` 预销户, `9` 已销户; OneLink-PB: `00` 正常, `01` 单向停机, `02` 停机, `03` 预销号,
/// `04` 销号, `07` 待激活 (`99` 号码不存在 is the unknown card). `Err(())`: outside the table.
fn network_of_word(word: &str) -> Result<Option<NetworkStatus>, ()> {
    Ok(Some(match word {
        "2" | "00" => NetworkStatus::Online,
        // Before first use the network is open: the first session activates the card.
        "1" | "6" | "07" => NetworkStatus::Online,
        "4" | "7" | "8" | "9" | "01" | "02" | "03" | "04" => NetworkStatus::Stopped,
        "99" => return Ok(None),
        _ => return Err(()),
    }))
}

/// `realNameStatus` → ours: `0` 未实名, `1` 已实名.
fn realname_of_word(word: &str) -> Option<RealNameStatus> {
    match word {
        "1" => Some(RealNameStatus::Verified),
        "0" => Some(RealNameStatus::NotVerified),
        _ => None,
    }
}

impl OneLink {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        let field = |name: &str| {
            account
                .credentials
                .get(name)
                .filter(|s| !s.is_empty())
                .cloned()
                .ok_or_else(|| {
                    GatewayError::Auth(format!("onelink needs credentials field `{name}`"))
                })
        };
        let batch_size = (account.limits.batch_size as usize).clamp(1, PLATFORM_BATCH_MAX);
        Ok(Self {
            http: CarrierHttp::new(account, ctx)?,
            appid: field("appid")?,
            password: field("password")?,
            tokens: TokenCache::default(),
            clock: ctx.clock.clone(),
            batch_size,
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

    // ------------------------------------------------------------ the envelope

    /// Reads an answer: throttling and HTTP failures as errors, then the envelope.
    fn read(&self, call: &str, answer: &Answer) -> Result<Reply, GatewayError> {
        if answer.status == 429 {
            return Err(GatewayError::Throttled {
                retry_after: answer.retry_after().or(Some(THROTTLE_HINT)),
            });
        }
        if !answer.is_success() {
            return Err(GatewayError::Carrier {
                status: answer.status,
                body: self.http.excerpt(answer),
            });
        }
        let env: Envelope = self.http.json(call, answer)?;
        let Some(status) = text(Some(&env.status)) else {
            return Err(self.http.fault(
                AnswerFault::BadValue,
                format!("{call}: `status` is {}", env.status),
            ));
        };
        if status != code::OK {
            let message = env.message.unwrap_or_default();
            return Ok(Reply::Refused(status, message));
        }
        match env.result {
            None | Some(Value::Null) => Ok(Reply::Ok(Vec::new())),
            Some(Value::Array(items)) => Ok(Reply::Ok(items)),
            Some(other) => Err(self.http.fault(
                AnswerFault::BadValue,
                format!("{call}: `result` is not a list: {other}"),
            )),
        }
    }

    /// The error of a refusal (`status` ≠ `0`), by the documented codes; an undocumented code is
    /// [`AnswerFault::UnknownCode`].
    fn refusal(&self, call: &str, status: &str, message: &str) -> GatewayError {
        let message: String = self.http.scrub(message).chars().take(200).collect();
        let detail = format!("{call}: OneLink status {status}: {message}");
        match status {
            code::AUTH | code::TOKEN => GatewayError::Auth(detail),
            code::THROTTLED => GatewayError::Throttled {
                retry_after: Some(THROTTLE_HINT),
            },
            code::NO_CARD => GatewayError::NotFound,
            code::LOCKED => GatewayError::ChangeLocked {
                retry_after: Some(CHANGE_LOCK_HINT),
                detail,
            },
            code::TRANSID | code::TOO_MANY | code::STATE | code::PARAM | code::NO_JOB => {
                GatewayError::Carrier {
                    status: 200,
                    body: detail,
                }
            }
            _ => self.http.fault(AnswerFault::UnknownCode, detail),
        }
    }

    // ------------------------------------------------------------ token

    /// A new token and its lifetime (`get/token`).
    async fn fetch_token(&self) -> Result<(String, Duration), GatewayError> {
        let transid = self.transid();
        let url = self.url(
            "/get/token",
            &[
                ("appid", self.appid.expose()),
                ("password", self.password.expose()),
                ("transid", transid.as_str()),
            ],
        )?;
        let req = self.http.client().get(url);
        let answer = self.http.query("token", req).await?;
        let items = match self.read("token", &answer)? {
            Reply::Ok(items) => items,
            Reply::Refused(status, message) => {
                return Err(match status.as_str() {
                    code::AUTH | code::TOKEN => GatewayError::Auth(format!(
                        "token: the platform refused the appid/password (OneLink status {status})"
                    )),
                    _ => self.refusal("token", &status, &message),
                });
            }
        };
        let first = items.first();
        let token = first
            .and_then(|i| i.get("token"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                self.http
                    .fault(AnswerFault::MissingField, "token: no `result[0].token`")
            })?
            .to_owned();
        self.http.add_secret(&token);
        let lifetime = match first.and_then(|i| i.get("ttl")) {
            None | Some(Value::Null) => DEFAULT_TOKEN_LIFETIME,
            Some(v) => {
                let secs = amount_of(v)
                    .filter(|d| d.fract().is_zero())
                    .and_then(|d| d.to_u64())
                    .filter(|s| *s > 0)
                    .ok_or_else(|| {
                        self.http
                            .fault(AnswerFault::BadValue, format!("token: `ttl` is {v}"))
                    })?;
                Duration::from_secs(secs)
            }
        };
        Ok((token, lifetime))
    }

    async fn token(&self) -> Result<String, GatewayError> {
        self.tokens.get(|| self.fetch_token()).await
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
        let mut renewed = false;
        loop {
            let token = self.token().await?;
            let transid = self.transid();
            let mut query: Vec<(&str, &str)> = Vec::with_capacity(params.len() + 2);
            query.push(("transid", transid.as_str()));
            query.push(("token", token.as_str()));
            query.extend_from_slice(params);
            let url = self.url(path, &query)?;
            let answer = if command {
                let req = self.http.client().post(url);
                self.http.command(call, req).await?
            } else {
                let req = self.http.client().get(url);
                self.http.query(call, req).await?
            };
            match self.read(call, &answer)? {
                Reply::Ok(items) => return Ok(Ok(items)),
                Reply::Refused(status, _) if status == code::TOKEN => {
                    self.tokens.invalidate(&token).await;
                    if renewed {
                        return Err(GatewayError::Auth(format!(
                            "{call}: the platform refused a freshly issued token (OneLink status {status})"
                        )));
                    }
                    renewed = true;
                }
                Reply::Refused(status, message) => return Ok(Err((status, message))),
            }
        }
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
        let item = items.into_iter().next().ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("{call}: an empty `result`"),
            )
        })?;
        self.check_card(call, &item, iccid)?;
        Ok(item)
    }

    /// A batch query over `iccids` in requests of at most `batch_size` cards; results in the
    /// input order. An item naming no card or a card not asked is ignored (counted as a fault);
    /// a card no item names is `MissingFromBatch`. A failed request fails the whole call when it
    /// is the first; a later one fails its own cards only.
    async fn batch<T, F>(
        &self,
        call: &'static str,
        path: &str,
        iccids: &[String],
        parse: F,
    ) -> Result<Vec<Result<T, GatewayError>>, GatewayError>
    where
        T: Clone,
        F: Fn(&Value) -> Result<T, GatewayError>,
    {
        let mut out = Vec::with_capacity(iccids.len());
        for (n, chunk) in iccids.chunks(self.batch_size).enumerate() {
            let joined = chunk.join("_");
            let items = match self.call(call, false, path, &[("iccids", &joined)]).await {
                Ok(items) => items,
                Err(e) if n == 0 => return Err(e),
                Err(e) => {
                    out.extend(chunk.iter().map(|_| Err(e.clone())));
                    continue;
                }
            };
            let asked: HashSet<&str> = chunk.iter().map(String::as_str).collect();
            let mut found: HashMap<&str, Result<T, GatewayError>> = HashMap::new();
            for item in &items {
                let Some(named) = item.get("iccid").and_then(Value::as_str).map(str::trim) else {
                    let _ = self.http.fault(
                        AnswerFault::MissingField,
                        format!("{call}: a batch item without `iccid`"),
                    );
                    continue;
                };
                let Some(key) = asked.get(named).copied() else {
                    let _ = self.http.fault(
                        AnswerFault::WrongIccid,
                        format!("{call}: the batch answer names {named}, which was not asked"),
                    );
                    continue;
                };
                if found.contains_key(key) {
                    continue;
                }
                let status = text(item.get("status"));
                let r = match status.as_deref() {
                    None | Some(code::OK) => parse(item),
                    Some(s) => {
                        let message = text(item.get("message")).unwrap_or_default();
                        Err(self.refusal(call, s, &message))
                    }
                };
                found.insert(key, r);
            }
            for iccid in chunk {
                out.push(
                    found
                        .get(iccid.as_str())
                        .cloned()
                        .unwrap_or(Err(GatewayError::MissingFromBatch)),
                );
            }
        }
        Ok(out)
    }

    // ------------------------------------------------------------ items

    fn realname_of(&self, call: &str, item: &Value) -> Result<RealNameStatus, GatewayError> {
        let word = text(item.get("realNameStatus")).ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("{call}: no `realNameStatus`"),
            )
        })?;
        realname_of_word(&word).ok_or_else(|| {
            self.http.fault(
                AnswerFault::UnknownStatus,
                format!("{call}: `realNameStatus` {word} is outside the documented table"),
            )
        })
    }

    fn network_of(&self, call: &str, item: &Value) -> Result<NetworkStatus, GatewayError> {
        let word = text(item.get("cardStatus")).ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("{call}: no `cardStatus`"),
            )
        })?;
        match network_of_word(&word) {
            Ok(Some(s)) => Ok(s),
            Ok(None) => Err(GatewayError::NotFound),
            Err(()) => Err(self.http.fault(
                AnswerFault::UnknownStatus,
                format!("{call}: `cardStatus` {word} is outside the documented table"),
            )),
        }
    }

    /// A KB figure (`field` of `item`) in exact megabytes; absent: `None`.
    fn kb_field(
        &self,
        call: &str,
        item: &Value,
        field: &str,
    ) -> Result<Option<Megabytes>, GatewayError> {
        let v = match item.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
            Some(v) => v,
        };
        amount_of(v).and_then(kb_to_mb).map(Some).ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("{call}: `{field}` {v} is not a plain non-negative number of KB"),
            )
        })
    }

    fn usage_of(
        &self,
        call: &str,
        item: &Value,
        month: NaiveDate,
    ) -> Result<MonthUsage, GatewayError> {
        let mb = self.kb_field(call, item, "dataAmount")?.ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("{call}: no `dataAmount`"),
            )
        })?;
        let month_total_mb = check_month_total(mb).map_err(|e| {
            self.http
                .fault(AnswerFault::BadValue, format!("{call}: {e}"))
        })?;
        Ok(MonthUsage {
            month,
            month_total_mb,
        })
    }

    /// `accmMarginList` → active packages: `offeringId`, `useAmount` (used), `totalAmount`
    /// (the limit; absent: none).
    fn packages_of(&self, item: &Value) -> Result<Vec<CarrierPackage>, GatewayError> {
        const CALL: &str = "packages";
        let list = match item.get("accmMarginList") {
            Some(Value::Array(l)) => l.as_slice(),
            Some(Value::Null) => &[],
            None => {
                return Err(self
                    .http
                    .fault(AnswerFault::MissingField, "packages: no `accmMarginList`"));
            }
            Some(other) => {
                return Err(self.http.fault(
                    AnswerFault::BadValue,
                    format!("packages: `accmMarginList` is not a list: {other}"),
                ));
            }
        };
        list.iter()
            .map(|o| {
                let external_id = text(o.get("offeringId"))
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| {
                        self.http.fault(
                            AnswerFault::MissingField,
                            "packages: an offering without `offeringId`",
                        )
                    })?;
                let used_mb = self.kb_field(CALL, o, "useAmount")?.ok_or_else(|| {
                    self.http.fault(
                        AnswerFault::MissingField,
                        format!("packages: offering {external_id} without `useAmount`"),
                    )
                })?;
                let limit_mb = self.kb_field(CALL, o, "totalAmount")?;
                // Read to refuse a malformed margin; the limit and the use say it all.
                self.kb_field(CALL, o, "remainAmount")?;
                Ok(CarrierPackage {
                    external_id,
                    status: PackageStatus::Active,
                    used_mb,
                    limit_mb,
                    activated_at: None,
                    expires_at: None,
                })
            })
            .collect()
    }

    // ------------------------------------------------------------ changes

    /// One single-card change (`operType` `0` stop, `1` resume); the status after it. A card
    /// already in the wanted status is refused by the platform (`12035`): then its status is
    /// read, and the change is done when it is the one wanted.
    async fn change(
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

    /// Asks the platform to change the status of up to `batch_size` cards at once
    /// (`change/sim-status/batch`, `operType` `9` stop / `11` resume, `reason` `01`). The platform
    /// refuses the whole call when one card changed within the lock window
    /// ([`GatewayError::ChangeLocked`]). The outcome per card is read with
    /// [`Self::batch_change_result`].
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) async fn change_status_batch(
        &self,
        iccids: &[String],
        target: NetworkStatus,
    ) -> Result<BatchChange, GatewayError> {
        if iccids.is_empty() {
            return Err(GatewayError::Unsupported("an empty batch status change"));
        }
        if iccids.len() > self.batch_size {
            return Err(GatewayError::Unsupported(
                "a batch status change of more cards than the batch size",
            ));
        }
        let (call, oper) = match target {
            NetworkStatus::Stopped => ("stop", "9"),
            NetworkStatus::Online => ("start", "11"),
        };
        let joined = iccids.join("_");
        let params = [
            ("iccids", joined.as_str()),
            ("operType", oper),
            ("reason", "01"),
        ];
        let items = self
            .http
            .retry_command(call, || {
                self.call(call, true, "/change/sim-status/batch", &params)
            })
            .await?;
        let job_id = items
            .first()
            .and_then(|i| text(i.get("jobId")))
            .filter(|j| !j.is_empty())
            .ok_or_else(|| {
                self.http.fault(
                    AnswerFault::MissingField,
                    format!("{call}: no `result[0].jobId`"),
                )
            })?;
        Ok(BatchChange {
            job_id,
            iccids: iccids.to_vec(),
            target,
        })
    }

    /// Where a batch status change stands (`query/sim-batch-result?jobId=`).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) async fn batch_change_result(
        &self,
        change: &BatchChange,
    ) -> Result<BatchChangeState, GatewayError> {
        const CALL: &str = "batch_result";
        let items = self
            .call(
                CALL,
                false,
                "/query/sim-batch-result",
                &[("jobId", &change.job_id)],
            )
            .await?;
        let item = items.first().ok_or_else(|| {
            self.http
                .fault(AnswerFault::MissingField, "batch_result: an empty `result`")
        })?;
        let job_status = text(item.get("jobStatus")).ok_or_else(|| {
            self.http
                .fault(AnswerFault::MissingField, "batch_result: no `jobStatus`")
        })?;
        match job_status.as_str() {
            "0" | "1" => return Ok(BatchChangeState::Pending),
            "2" | "3" => {}
            "4" => {
                return Err(GatewayError::Carrier {
                    status: 200,
                    body: format!("batch_result: job {} failed (jobStatus 4)", change.job_id),
                });
            }
            other => {
                return Err(self.http.fault(
                    AnswerFault::UnknownStatus,
                    format!("batch_result: `jobStatus` {other} is outside the documented table"),
                ));
            }
        }
        let list = match item.get("resultList") {
            Some(Value::Array(l)) => l.as_slice(),
            _ => &[],
        };
        let asked: HashSet<&str> = change.iccids.iter().map(String::as_str).collect();
        let mut found: HashMap<&str, Result<NetworkStatus, GatewayError>> = HashMap::new();
        for r in list {
            let Some(named) = r.get("resultId").and_then(Value::as_str).map(str::trim) else {
                continue;
            };
            let Some(key) = asked.get(named).copied() else {
                let _ = self.http.fault(
                    AnswerFault::WrongIccid,
                    format!("batch_result: the result names {named}, which was not asked"),
                );
                continue;
            };
            if found.contains_key(key) {
                continue;
            }
            let outcome = match text(r.get("status")).as_deref() {
                Some(code::OK) => Ok(change.target),
                Some(s) => {
                    let message = text(r.get("message")).unwrap_or_default();
                    Err(self.refusal(CALL, s, &message))
                }
                None => Err(self.http.fault(
                    AnswerFault::MissingField,
                    format!("batch_result: no `status` for {named}"),
                )),
            };
            found.insert(key, outcome);
        }
        Ok(BatchChangeState::Done(
            change
                .iccids
                .iter()
                .map(|i| {
                    found
                        .get(i.as_str())
                        .cloned()
                        .unwrap_or(Err(GatewayError::MissingFromBatch))
                })
                .collect(),
        ))
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
        self.http
            .retry_command("stop", || {
                self.change("stop", iccid, NetworkStatus::Stopped)
            })
            .await
    }

    async fn start(&self, _: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        self.http
            .retry_command("start", || {
                self.change("start", iccid, NetworkStatus::Online)
            })
            .await
    }

    async fn network_status(
        &self,
        _: CarrierId,
        iccid: &str,
    ) -> Result<NetworkStatus, GatewayError> {
        self.status_of(iccid).await
    }

    fn batch_size(&self, _: CarrierId) -> usize {
        self.batch_size
    }

    async fn realname_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<RealNameStatus, GatewayError>>, GatewayError> {
        self.batch(
            "realname",
            "/query/sim-real-name-status/batch",
            iccids,
            |item| self.realname_of("realname", item),
        )
        .await
    }

    async fn usage_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
        let month = self.month();
        self.batch("usage", "/query/sim-data-usage/batch", iccids, |item| {
            self.usage_of("usage", item, month)
        })
        .await
    }

    async fn network_status_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<NetworkStatus, GatewayError>>, GatewayError> {
        self.batch(
            "network_status",
            "/query/sim-status/batch",
            iccids,
            |item| self.network_of("network_status", item),
        )
        .await
    }

    /// A fresh `get/token`: the platform checks the appid and password and answers its
    /// documented envelope. Harmless: a token is all it issues.
    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        self.fetch_token().await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    //! The batch status change has no trait method yet: it is tested here, on the adapter type,
    //! against the simulator (`docs/carriers/onelink.md`, section 10.3).

    use super::*;
    use chrono::{TimeZone, Utc};
    use domain::{CarrierLimits, CarrierProtocol, Credentials, ManualClock, SystemClock};
    use gateway_sim::{SimAccount, SimAccountPatch, SimCardSpec, SimHandle, SimOptions, SimServer};

    const P: CarrierProtocol = CarrierProtocol::OneLink;

    fn account(base_url: String, limits: CarrierLimits) -> CarrierAccount {
        let credentials = SimAccount::default_for(P)
            .credentials
            .into_iter()
            .fold(Credentials::new(), |c, (k, v)| c.with(k, v));
        CarrierAccount {
            carrier_id: CarrierId(7),
            name: "China Mobile".into(),
            protocol: P,
            base_url,
            credentials,
            limits,
            enabled: true,
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    async fn sim_and_adapter(limits: CarrierLimits) -> (SimHandle, OneLink) {
        let sim = SimServer::start(SimOptions::default()).await.unwrap();
        let ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, Arc::new(SystemClock));
        let gw = OneLink::new(&account(sim.url_of(P), limits), &ctx).unwrap();
        (sim, gw)
    }

    async fn wait_done(
        gw: &OneLink,
        change: &BatchChange,
    ) -> Vec<Result<NetworkStatus, GatewayError>> {
        for _ in 0..5 {
            match gw.batch_change_result(change).await.unwrap() {
                BatchChangeState::Pending => continue,
                BatchChangeState::Done(r) => return r,
            }
        }
        panic!("the job never finished");
    }

    #[test]
    fn onelink_5_2_transid_is_appid_beijing_stamp_and_an_8_digit_sequence() {
        // 2026-03-31 17:00:05 UTC is 2026-04-01 01:00:05 in Beijing.
        let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 3, 31, 17, 0, 5).unwrap());
        let ctx = AdapterContext::new(chrono_tz::UTC, Arc::new(clock));
        let gw = OneLink::new(
            &account("http://127.0.0.1:9".into(), P.default_limits()),
            &ctx,
        )
        .unwrap();
        let a = gw.transid();
        let b = gw.transid();
        let prefix = "sim-onelink-appid20260401010005";
        assert!(a.starts_with(prefix), "{a}");
        assert_eq!(a.len(), prefix.len() + 8);
        assert!(a[prefix.len()..].bytes().all(|c| c.is_ascii_digit()));
        assert_ne!(a, b, "the sequence moves on");
        assert_eq!(gw.month(), NaiveDate::from_ymd_opt(2026, 4, 1).unwrap());
    }

    #[tokio::test]
    async fn onelink_5_3_the_adapter_prints_no_credential_nor_token() {
        let (sim, gw) = sim_and_adapter(P.default_limits()).await;
        let token = gw.token().await.unwrap();
        let shown = format!("{gw:?}");
        assert!(!shown.contains(&token), "{shown}");
        assert!(!shown.contains("sim-onelink-password") && !shown.contains("sim-onelink-appid"));
        sim.shutdown().await.unwrap();
    }

    #[test]
    fn onelink_9_status_table() {
        assert_eq!(network_of_word("2"), Ok(Some(NetworkStatus::Online)));
        assert_eq!(network_of_word("4"), Ok(Some(NetworkStatus::Stopped)));
        assert_eq!(network_of_word("00"), Ok(Some(NetworkStatus::Online)));
        assert_eq!(network_of_word("02"), Ok(Some(NetworkStatus::Stopped)));
        assert_eq!(network_of_word("99"), Ok(None));
        assert_eq!(network_of_word("3"), Err(()));
        assert_eq!(network_of_word("05"), Err(()));
        assert_eq!(realname_of_word("1"), Some(RealNameStatus::Verified));
        assert_eq!(realname_of_word("0"), Some(RealNameStatus::NotVerified));
        assert_eq!(realname_of_word("2"), None);
    }

    #[tokio::test]
    async fn onelink_10_3_batch_status_change_is_a_job_with_a_result_per_card() {
        let (sim, gw) = sim_and_adapter(P.default_limits()).await;
        sim.state()
            .upsert_cards(vec![
                SimCardSpec::new("898600S1"),
                SimCardSpec::new("898600S2"),
                SimCardSpec {
                    network_status: NetworkStatus::Stopped,
                    ..SimCardSpec::new("898600S3")
                },
            ])
            .unwrap();
        let cards: Vec<String> = ["898600S1", "unknown-card", "898600S2", "898600S3"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let change = gw
            .change_status_batch(&cards, NetworkStatus::Stopped)
            .await
            .unwrap();
        assert!(!change.job_id.is_empty());
        // The simulator answers the first result query "in progress".
        assert_eq!(
            gw.batch_change_result(&change).await.unwrap(),
            BatchChangeState::Pending
        );
        let results = wait_done(&gw, &change).await;
        assert_eq!(results[0], Ok(NetworkStatus::Stopped));
        assert_eq!(results[1], Err(GatewayError::NotFound));
        assert_eq!(results[2], Ok(NetworkStatus::Stopped));
        assert!(
            matches!(&results[3], Err(GatewayError::Carrier { body, .. }) if body.contains("12035")),
            "already stopped: {:?}",
            results[3]
        );
        for (iccid, stops) in [("898600S1", 1), ("898600S2", 1), ("898600S3", 0)] {
            let v = sim.state().card(iccid).unwrap();
            assert_eq!(v.network_status, NetworkStatus::Stopped);
            assert_eq!((v.stop_calls, v.stops_applied), (1, stops), "{iccid}");
        }

        // Within the lock window the platform refuses the whole batch: nothing changes.
        let again = gw
            .change_status_batch(&cards[..1], NetworkStatus::Online)
            .await
            .unwrap_err();
        assert!(
            matches!(
                again,
                GatewayError::ChangeLocked {
                    retry_after: Some(_),
                    ..
                }
            ),
            "{again:?}"
        );
        let v = sim.state().card("898600S1").unwrap();
        assert_eq!((v.start_calls, v.starts_applied), (1, 0), "not retried");
        assert_eq!(v.network_status, NetworkStatus::Stopped);

        // Without the lock, the resume goes through.
        sim.state().set_account(
            P,
            SimAccountPatch {
                change_lock_secs: Some(0),
                ..SimAccountPatch::default()
            },
        );
        let resume = gw
            .change_status_batch(&cards[..1], NetworkStatus::Online)
            .await
            .unwrap();
        assert_eq!(
            wait_done(&gw, &resume).await,
            vec![Ok(NetworkStatus::Online)]
        );
        assert_eq!(
            sim.state().card("898600S1").unwrap().network_status,
            NetworkStatus::Online
        );

        // More cards than a batch takes are refused before any request.
        let small = CarrierLimits {
            batch_size: 1,
            ..P.default_limits()
        };
        let (_sim2, gw2) = sim_and_adapter(small).await;
        assert!(matches!(
            gw2.change_status_batch(&cards[..2], NetworkStatus::Stopped)
                .await,
            Err(GatewayError::Unsupported(_))
        ));
        sim.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn onelink_10_3_a_batch_result_naming_another_card_is_never_attributed() {
        let (sim, gw) = sim_and_adapter(P.default_limits()).await;
        sim.state()
            .upsert_cards(vec![
                SimCardSpec::new("898600T1"),
                SimCardSpec::new("898600T2"),
            ])
            .unwrap();
        let cards = vec!["898600T1".to_owned(), "898600T2".to_owned()];
        let change = gw
            .change_status_batch(&cards, NetworkStatus::Stopped)
            .await
            .unwrap();
        assert_eq!(
            gw.batch_change_result(&change).await.unwrap(),
            BatchChangeState::Pending
        );
        sim.state().set_script(gateway_sim::Script {
            fail_next: vec![gateway_sim::ScriptStep::Malformed(
                gateway_sim::Malformed::WrongIccid,
            )],
            call: None,
        });
        assert_eq!(
            gw.batch_change_result(&change).await.unwrap(),
            BatchChangeState::Done(vec![
                Err(GatewayError::MissingFromBatch),
                Ok(NetworkStatus::Stopped)
            ])
        );
        sim.shutdown().await.unwrap();
    }
}
