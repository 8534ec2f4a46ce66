//! China Telecom 5GCMP (天翼物联 5G 连接管理平台), through its API gateway
//! (`https://cmp-api.ctwing.cn:20164`). `docs/carriers/ctcc-5gcmp.md` is the page: endpoints,
//! signature, limits, status and unit tables, and the assumptions a real account should confirm.
//!
//! No token: every request carries `AppKey`, `Timestamp` (`yyyyMMddHHmmss`, GMT) and `Sign`, the
//! hexadecimal of the ASCII of the lower-case hexadecimal MD5 of
//! `sorted query + raw body + secret + timestamp`, upper-cased (the gateway's `SignUtil.signMD5`).
//!
//! Calls: real-name, SIM status and month usage through the platform's batch queries (up to 100
//! numbers a call), products of one card, and stop/resume through LC002 `disabledNumberService`
//! (`orderTypeId` 19 停机保号 / 20 停机保号复机), which answers XML.

use super::AdapterContext;
use super::transport::{Answer, CarrierHttp};
use super::units::{amount_of, check_month_total, kb_to_mb, parse_month};
use crate::{AnswerFault, CarrierGateway, GatewayError};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use domain::{
    CarrierAccount, CarrierId, CarrierPackage, Clock, Megabytes, MonthUsage, NetworkStatus,
    PackageStatus, RealNameStatus, Secret,
};
use md5::{Digest, Md5};
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Most numbers one batch query carries (the platform's documented limit).
const PLATFORM_BATCH_MAX: usize = 100;

const REALNAME_PATH: &str = "/api/v1/realName/qryRealNameStatus";
const SIM_STATUS_PATH: &str = "/api/v1/prod/batchQrySimStatus";
const FLOW_PATH: &str = "/api/v1/batchQry/batchQryFlowByMonth";
const PRODUCTS_PATH: &str = "/api/v1/prod/qryProdInstInfo/";
const DISABLED_NUMBER_PATH: &str = "/5gcmp/openapi/v1/common/disabledNumberService";

/// The envelope codes the adapter knows (`code` of every JSON answer).
mod code {
    pub(super) const OK: i64 = 0;
    /// AppKey unknown or disabled, signature wrong, timestamp refused.
    pub(super) const AUTH: [i64; 3] = [10001, 10002, 10003];
    pub(super) const THROTTLED: i64 = 10004;
    /// Parameter error, too many numbers.
    pub(super) const REFUSED: [i64; 2] = [10006, 10007];
    pub(super) const NO_SUCH_NUMBER: i64 = 10008;
}

/// China Standard Time, in which the platform writes its months and dates.
const CST_SECS: i32 = 8 * 3600;

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
        let field = |name: &str| {
            account
                .credentials
                .get(name)
                .filter(|s| !s.is_empty())
                .cloned()
                .ok_or_else(|| {
                    GatewayError::Auth(format!("ctcc-5gcmp needs credentials field `{name}`"))
                })
        };
        Ok(Self {
            http: CarrierHttp::new(account, ctx)?,
            app_key: field("app_key")?,
            secret: field("secret")?,
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

    // ------------------------------------------------------------ answers

    /// The HTTP-level outcome: throttling, refused signature, 5xx, other non-success.
    fn check_http(&self, answer: &Answer) -> Result<(), GatewayError> {
        match answer.status {
            200..=299 => Ok(()),
            429 => Err(GatewayError::Throttled {
                retry_after: answer.retry_after(),
            }),
            401 | 403 => Err(GatewayError::Auth(format!(
                "the 5GCMP gateway refused the signed request (HTTP {}): {}",
                answer.status,
                self.http.excerpt(answer)
            ))),
            status => Err(GatewayError::Carrier {
                status,
                body: self.http.excerpt(answer),
            }),
        }
    }

    /// The envelope's `data` of a success, or the code's meaning.
    fn envelope(&self, what: &str, answer: &Answer) -> Result<Value, GatewayError> {
        self.check_http(answer)?;
        let env: Envelope = self.http.json(what, answer)?;
        self.data_of(what, answer, env)
    }

    fn data_of(&self, what: &str, answer: &Answer, env: Envelope) -> Result<Value, GatewayError> {
        let code = match &env.code {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }
        .ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("{what}: code {} is no integer", env.code),
            )
        })?;
        let msg = self.http.scrub(env.msg.as_deref().unwrap_or(""));
        match code {
            code::OK => Ok(env.data),
            c if code::AUTH.contains(&c) => Err(GatewayError::Auth(format!(
                "the 5GCMP gateway refused the signed request (code {c}): {msg}"
            ))),
            code::THROTTLED => Err(GatewayError::Throttled {
                retry_after: answer.retry_after(),
            }),
            code::NO_SUCH_NUMBER => Err(GatewayError::NotFound),
            c if code::REFUSED.contains(&c) => Err(GatewayError::Carrier {
                status: answer.status,
                body: format!("code {c}: {msg}"),
            }),
            c => Err(self
                .http
                .fault(AnswerFault::UnknownCode, format!("{what}: code {c}: {msg}"))),
        }
    }

    // ------------------------------------------------------------ batch queries

    /// One batch query over `iccids`, split into calls of at most `batch_max` numbers. Each
    /// card's item goes through `parse`; a card the answer does not mention is
    /// `MissingFromBatch`; items naming a card not asked are ignored (counted as a fault). A call
    /// that fails as a whole fails its cards; when every call failed, the outer error.
    async fn batch<T>(
        &self,
        spec: &BatchSpec,
        iccids: &[String],
        parse: impl Fn(&Value) -> Result<T, GatewayError>,
    ) -> Result<Batch<T>, GatewayError> {
        let mut results = Vec::with_capacity(iccids.len());
        let mut foreign = 0;
        let mut failures = 0;
        let mut last_err = None;
        for chunk in iccids.chunks(self.batch_max) {
            match self.one_batch(spec, chunk, &parse).await {
                Ok((mut r, f)) => {
                    results.append(&mut r);
                    foreign += f;
                }
                Err(e) => {
                    failures += 1;
                    results.extend(chunk.iter().map(|_| Err(e.clone())));
                    last_err = Some(e);
                }
            }
        }
        if let Some(e) = last_err
            && failures == iccids.len().div_ceil(self.batch_max)
        {
            return Err(e);
        }
        Ok(Batch { results, foreign })
    }

    async fn one_batch<T>(
        &self,
        spec: &BatchSpec,
        chunk: &[String],
        parse: &impl Fn(&Value) -> Result<T, GatewayError>,
    ) -> Result<(Vec<Result<T, GatewayError>>, usize), GatewayError> {
        let answer = self
            .post_json(spec.call, spec.path, &json!({ spec.field: chunk }))
            .await?;
        let data = self.envelope(spec.call, &answer)?;
        let list = match spec.list {
            Some(key) => data.get(key),
            None => Some(&data),
        }
        .and_then(Value::as_array)
        .ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!(
                    "{}: no list `{}` in the answer",
                    spec.call,
                    spec.list.unwrap_or("data")
                ),
            )
        })?;
        let mut by_number: HashMap<&str, Vec<&Value>> = HashMap::new();
        let mut foreign = 0;
        for item in list {
            let Some(n) = item.get("accessNumber").and_then(Value::as_str) else {
                foreign += 1;
                let _ = self.http.fault(
                    AnswerFault::MissingField,
                    format!("{}: an item without accessNumber", spec.call),
                );
                continue;
            };
            if chunk.iter().any(|c| c == n) {
                by_number.entry(n).or_default().push(item);
            } else {
                foreign += 1;
                let _ = self.http.fault(
                    AnswerFault::WrongIccid,
                    format!("{}: the answer names {n}, which was not asked", spec.call),
                );
            }
        }
        let results = chunk
            .iter()
            .map(
                |iccid| match by_number.get(iccid.as_str()).map(Vec::as_slice) {
                    None | Some([]) => Err(GatewayError::MissingFromBatch),
                    Some([one]) => parse(one),
                    Some([first, rest @ ..]) => {
                        if rest.iter().all(|v| v == first) {
                            parse(first)
                        } else {
                            Err(self.http.fault(
                                AnswerFault::BadValue,
                                format!("{}: {iccid} answered twice, differently", spec.call),
                            ))
                        }
                    }
                },
            )
            .collect();
        Ok((results, foreign))
    }

    /// One card through a batch query: a card the answer left out is a fault (an answer naming
    /// another card: `WrongIccid`).
    async fn single<T>(
        &self,
        spec: &BatchSpec,
        iccid: &str,
        parse: impl Fn(&Value) -> Result<T, GatewayError>,
    ) -> Result<T, GatewayError> {
        let b = self.batch(spec, &[iccid.to_owned()], parse).await?;
        match b.results.into_iter().next() {
            Some(Err(GatewayError::MissingFromBatch)) | None => Err(if b.foreign > 0 {
                self.http.fault(
                    AnswerFault::WrongIccid,
                    format!("{}: the answer names another card than {iccid}", spec.call),
                )
            } else {
                self.http.fault(
                    AnswerFault::MissingField,
                    format!("{}: the answer does not mention {iccid}", spec.call),
                )
            }),
            Some(r) => r,
        }
    }

    fn parse_realname(&self, item: &Value) -> Result<RealNameStatus, GatewayError> {
        match text_of(item, "status").as_deref() {
            Some("1") => Ok(RealNameStatus::Verified),
            Some("0") => Ok(RealNameStatus::NotVerified),
            Some("-1") => Err(GatewayError::NotFound),
            other => Err(self.http.fault(
                AnswerFault::UnknownStatus,
                format!("realname: status {other:?} is not in the table"),
            )),
        }
    }

    fn parse_network(&self, item: &Value) -> Result<NetworkStatus, GatewayError> {
        match text_of(item, "simStatus").as_deref() {
            // 可激活, 测试激活, 在用: the card may use the network.
            Some("1" | "2" | "4") => Ok(NetworkStatus::Online),
            // 测试去激活, 停机, 运营商管理状态, 拆机.
            Some("3" | "5" | "6" | "7") => Ok(NetworkStatus::Stopped),
            Some("-1") => Err(GatewayError::NotFound),
            other => Err(self.http.fault(
                AnswerFault::UnknownStatus,
                format!("network status: simStatus {other:?} is not in the table"),
            )),
        }
    }

    fn parse_usage(&self, item: &Value) -> Result<MonthUsage, GatewayError> {
        match text_of(item, "status").as_deref() {
            Some("0") => {}
            Some("-1") => return Err(GatewayError::NotFound),
            other => {
                return Err(self.http.fault(
                    AnswerFault::UnknownStatus,
                    format!("usage: status {other:?} is not in the table"),
                ));
            }
        }
        let amount = item.get("flowAmount").ok_or_else(|| {
            self.http
                .fault(AnswerFault::MissingField, "usage: no flowAmount")
        })?;
        let figure = amount_of(amount).ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("usage: flowAmount {amount} is not a plain non-negative decimal"),
            )
        })?;
        let unit = text_of(item, "unit").unwrap_or_default();
        let mb = to_mb(figure, &unit)
            .ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage: unit {unit:?} is not MB, KB or GB"),
                )
            })
            .and_then(|mb| {
                check_month_total(mb).map_err(|e| {
                    self.http
                        .fault(AnswerFault::BadValue, format!("usage: {e}"))
                })
            })?;
        let month_text = text_of(item, "month").ok_or_else(|| {
            self.http
                .fault(AnswerFault::MissingField, "usage: no month")
        })?;
        let month = parse_month(&month_text).ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("usage: month {month_text:?} is not YYYYMM"),
            )
        })?;
        Ok(MonthUsage {
            month,
            month_total_mb: mb,
        })
    }

    fn parse_offer(&self, o: &Value) -> Result<CarrierPackage, GatewayError> {
        let external_id = text_of(o, "offerId")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                self.http.fault(
                    AnswerFault::MissingField,
                    "packages: an offer without offerId",
                )
            })?;
        let status = match text_of(o, "status").as_deref() {
            Some("0") => PackageStatus::Pending,
            Some("1") => PackageStatus::Active,
            Some("2") => PackageStatus::Expired,
            Some("3") => PackageStatus::Cancelled,
            other => {
                return Err(self.http.fault(
                    AnswerFault::UnknownStatus,
                    format!("packages: offer {external_id} status {other:?} is not in the table"),
                ));
            }
        };
        let unit = text_of(o, "unit").unwrap_or_else(|| "MB".to_owned());
        let amount = |field: &str, required: bool| -> Result<Option<Megabytes>, GatewayError> {
            match o.get(field) {
                None | Some(Value::Null) if !required => Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() && !required => Ok(None),
                Some(v) => amount_of(v)
                    .and_then(|d| to_mb(d, &unit))
                    .map(Some)
                    .ok_or_else(|| {
                        self.http.fault(
                            AnswerFault::BadValue,
                            format!(
                                "packages: offer {external_id} {field} {v} in {unit:?} is no amount"
                            ),
                        )
                    }),
                None => Err(self.http.fault(
                    AnswerFault::MissingField,
                    format!("packages: offer {external_id} has no {field}"),
                )),
            }
        };
        let used_mb = amount("usedAmount", true)?.unwrap_or(Decimal::ZERO);
        let limit_mb = amount("totalAmount", false)?;
        let date = |field: &str| -> Result<Option<DateTime<Utc>>, GatewayError> {
            match text_of(o, field).map(|s| s.trim().to_owned()) {
                None => Ok(None),
                Some(s) if s.is_empty() => Ok(None),
                Some(s) => cst_datetime(&s).map(Some).ok_or_else(|| {
                    self.http.fault(
                        AnswerFault::BadValue,
                        format!(
                            "packages: offer {external_id} {field} {s:?} is not yyyy-MM-dd HH:mm:ss"
                        ),
                    )
                }),
            }
        };
        let activated_at = date("effDate")?;
        let expires_at = date("expDate")?;
        Ok(CarrierPackage {
            external_id,
            status,
            used_mb,
            limit_mb,
            activated_at,
            expires_at,
        })
    }

    // ------------------------------------------------------------ stop / resume

    /// LC002 with `orderTypeId` 19 (stop) or 20 (resume); the status after it.
    async fn change(
        &self,
        call: &'static str,
        iccid: &str,
        order: &str,
        after: NetworkStatus,
    ) -> Result<NetworkStatus, GatewayError> {
        self.http
            .retry_command(call, || async move {
                let answer = self
                    .get(
                        call,
                        DISABLED_NUMBER_PATH,
                        &[
                            ("access_number", iccid),
                            ("acctCd", ""),
                            ("orderTypeId", order),
                        ],
                        true,
                    )
                    .await?;
                self.parse_disabled(call, iccid, &answer)?;
                Ok(after)
            })
            .await
    }

    fn parse_disabled(&self, call: &str, iccid: &str, answer: &Answer) -> Result<(), GatewayError> {
        self.check_http(answer)?;
        if answer.looks_like_html() {
            return Err(self.http.fault(
                AnswerFault::NotJson,
                format!(
                    "{call}: an HTML page (HTTP {}): {}",
                    answer.status,
                    self.http.excerpt(answer)
                ),
            ));
        }
        let text = String::from_utf8_lossy(&answer.body);
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') {
            // The gateway's own refusals are JSON whatever the API answers.
            let env: Envelope = self.http.json(call, answer)?;
            self.data_of(call, answer, env)?;
            return Err(self.http.fault(
                AnswerFault::NotJson,
                format!("{call}: a JSON success where the XML answer was expected"),
            ));
        }
        if !trimmed.starts_with('<') {
            return Err(self.http.fault(
                AnswerFault::NotJson,
                format!(
                    "{call}: neither XML nor JSON: {}",
                    self.http.excerpt(answer)
                ),
            ));
        }
        if let Some(n) = xml_text(&text, "ACCESS_NUMBER")
            && !n.is_empty()
            && n != iccid
        {
            return Err(self.http.fault(
                AnswerFault::WrongIccid,
                format!("{call}: the answer names {n}, asked {iccid}"),
            ));
        }
        let result = xml_text(&text, "RESULT").ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("{call}: no RESULT in the answer"),
            )
        })?;
        let msg = self
            .http
            .scrub(&xml_text(&text, "RESULTMSG").unwrap_or_default());
        match result.as_str() {
            "0" => Ok(()),
            "-1" | "-2" => Err(GatewayError::NotFound),
            "100008" => Err(GatewayError::Carrier {
                status: answer.status,
                body: format!("RESULT 100008: {msg}"),
            }),
            other => Err(self.http.fault(
                AnswerFault::UnknownCode,
                format!("{call}: RESULT {other}: {msg}"),
            )),
        }
    }

    fn realname_spec() -> BatchSpec {
        BatchSpec {
            call: "realname",
            path: REALNAME_PATH,
            field: "accessNumber",
            list: Some("statusList"),
        }
    }

    fn status_spec() -> BatchSpec {
        BatchSpec {
            call: "network_status",
            path: SIM_STATUS_PATH,
            field: "accessNumbers",
            list: Some("simStatusList"),
        }
    }

    fn usage_spec() -> BatchSpec {
        BatchSpec {
            call: "usage",
            path: FLOW_PATH,
            field: "accessNumber",
            list: None,
        }
    }
}

/// What distinguishes the three batch queries.
struct BatchSpec {
    call: &'static str,
    path: &'static str,
    /// The body's list field.
    field: &'static str,
    /// The list's key under `data` (`None`: `data` is the list).
    list: Option<&'static str>,
}

struct Batch<T> {
    results: Vec<Result<T, GatewayError>>,
    /// Items naming a card not asked.
    foreign: usize,
}

#[derive(Debug, Deserialize)]
struct Envelope {
    code: Value,
    #[serde(default)]
    msg: Option<String>,
    #[serde(default)]
    data: Value,
}

/// `Sign`: MD5 of `query + body + secret + timestamp` as lower-case hex, its ASCII bytes
/// hex-encoded again, upper-cased.
fn sign(sorted_query: &str, body: &str, secret: &str, timestamp: &str) -> String {
    let mut h = Md5::new();
    h.update(sorted_query.as_bytes());
    h.update(body.as_bytes());
    h.update(secret.as_bytes());
    h.update(timestamp.as_bytes());
    let lower: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    lower.bytes().map(|b| format!("{b:02X}")).collect()
}

/// Percent-encodes all but the unreserved characters of RFC 3986.
fn encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A field as text, whether the platform wrote a string or a number.
fn text_of(v: &Value, field: &str) -> Option<String> {
    match v.get(field)? {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An amount in the platform's unit as exact megabytes (1 MB = 1024 KB, 1 GB = 1024 MB).
fn to_mb(figure: Decimal, unit: &str) -> Option<Megabytes> {
    match unit.trim().to_ascii_uppercase().as_str() {
        "MB" | "M" => Some(figure),
        "KB" | "K" => kb_to_mb(figure),
        "GB" | "G" => figure.checked_mul(Decimal::from(1024)),
        _ => None,
    }
}

/// `yyyy-MM-dd HH:mm:ss` in China Standard Time.
fn cst_datetime(s: &str) -> Option<DateTime<Utc>> {
    let local = NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").ok()?;
    let tz = chrono::FixedOffset::east_opt(CST_SECS)?;
    tz.from_local_datetime(&local)
        .single()
        .map(|t| t.with_timezone(&Utc))
}

/// The text of the first `<tag>…</tag>` (tag matched without regard to case), unescaped for the
/// five predefined entities.
fn xml_text(doc: &str, tag: &str) -> Option<String> {
    let lower = doc.to_ascii_lowercase();
    let open = format!("<{}>", tag.to_ascii_lowercase());
    let close = format!("</{}>", tag.to_ascii_lowercase());
    let start = lower.find(&open)? + open.len();
    let end = start + lower[start..].find(&close)?;
    Some(
        doc[start..end]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

#[async_trait]
impl CarrierGateway for Ctcc {
    async fn realname(&self, _: CarrierId, iccid: &str) -> Result<RealNameStatus, GatewayError> {
        self.single(&Self::realname_spec(), iccid, |v| self.parse_realname(v))
            .await
    }

    async fn usage(&self, _: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        self.single(&Self::usage_spec(), iccid, |v| self.parse_usage(v))
            .await
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
        self.single(&Self::status_spec(), iccid, |v| self.parse_network(v))
            .await
    }

    fn batch_size(&self, _: CarrierId) -> usize {
        self.batch_max
    }

    async fn realname_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<RealNameStatus, GatewayError>>, GatewayError> {
        Ok(self
            .batch(&Self::realname_spec(), iccids, |v| self.parse_realname(v))
            .await?
            .results)
    }

    async fn usage_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
        Ok(self
            .batch(&Self::usage_spec(), iccids, |v| self.parse_usage(v))
            .await?
            .results)
    }

    async fn network_status_batch(
        &self,
        _: CarrierId,
        iccids: &[String],
    ) -> Result<Vec<Result<NetworkStatus, GatewayError>>, GatewayError> {
        Ok(self
            .batch(&Self::status_spec(), iccids, |v| self.parse_network(v))
            .await?
            .results)
    }

    /// A batch real-name query of no number: signed, harmless. A parameter refusal (the
    /// platform may want at least one number) still proves the signature was accepted.
    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        let answer = self
            .post_json("probe", REALNAME_PATH, &json!({ "accessNumber": [] }))
            .await?;
        match self.envelope("probe", &answer) {
            Ok(_) => Ok(()),
            Err(GatewayError::Carrier { status, .. }) if (200..300).contains(&status) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn sign_follows_the_documented_example() {
        assert_eq!(
            sign(
                "a=1&b=2&c=3",
                r#"{"name":"xf","age":"dd"}"#,
                "d1209cfefe895364e03",
                "20201101021435"
            ),
            "3863613035653132306631333231313733383637376333326536316631643934"
        );
    }

    #[test]
    fn units_and_dates_convert_exactly() {
        assert_eq!(to_mb(dec!(1025), "KB"), Some(dec!(1.0009765625)));
        assert_eq!(to_mb(dec!(42118.59), "MB"), Some(dec!(42118.59)));
        assert_eq!(to_mb(dec!(1.5), "GB"), Some(dec!(1536)));
        assert_eq!(to_mb(dec!(1), "TB"), None);
        assert_eq!(
            cst_datetime("2026-03-01 08:00:00"),
            Some(
                Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0)
                    .single()
                    .unwrap_or_default()
            )
        );
        assert_eq!(cst_datetime("2026/03/01"), None);
    }

    #[test]
    fn xml_fields_are_read_without_regard_to_case() {
        let doc = "<?xml version=\"1.0\"?><SvcCont><RESULT>0</RESULT><resultMsg>a &amp; b</resultMsg></SvcCont>";
        assert_eq!(xml_text(doc, "result").as_deref(), Some("0"));
        assert_eq!(xml_text(doc, "RESULTMSG").as_deref(), Some("a & b"));
        assert_eq!(xml_text(doc, "ACCESS_NUMBER"), None);
        assert_eq!(encode("8986 0A+"), "8986%200A%2B");
    }
}
