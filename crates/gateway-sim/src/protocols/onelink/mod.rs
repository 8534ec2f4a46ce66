//! China Mobile OneLink EC API v5 (中国移动物联卡能力开放平台), as `https://api.iot.10086.cn/v5/ec`
//! answers; `docs/carriers/onelink.md` is the page, with what the public material confirms and
//! what is assumed.
//!
//! Authentication: `get/token?appid=&password=&transid=` issues a token living the account's
//! `token_ttl_secs` (`result[0].token`, `result[0].ttl` in seconds); every other request carries
//! `transid` and `token` as query parameters. `transid` is `appid + yyyyMMddHHmmss + 8 digits`.
//! An unknown or lapsed token is status `12021`. Every answer is HTTP 200 with the envelope
//! `{status, message, result: [...]}`, `status` `"0"` on success; figures of data are KB
//! (1 MB = 1024 KB).
//!
//! | path | call | kind |
//! | --- | --- | --- |
//! | `get/token` | CMIOT_API23000 token | realname (auth) |
//! | `query/sim-real-name-status` | CMIOT_API23A10 real-name status | realname |
//! | `query/sim-real-name-status/batch` | the same, `iccids=a_b_c` (assumed path) | realname |
//! | `query/sim-data-usage` | CMIOT_API25U04 month-to-date usage (KB) | usage |
//! | `query/sim-data-usage/batch` | the same, `iccids=a_b_c` (assumed path) | usage |
//! | `query/sim-status` | CMIOT_API25S04 SIM status | realname (a card read) |
//! | `query/sim-status/batch` | the same, `iccids=a_b_c` (assumed path) | realname |
//! | `query/sim-data-margin` | CMIOT_API23U07 offerings' total/used/margin (KB) | packages |
//! | `change/sim-status` | CMIOT_API23S03 stop (`operType=0`) / resume (`1`) | stop, start |
//! | `change/sim-status/batch` | CMIOT_API23S06 batch change (`9` stop, `11` resume), a job | stop, start |
//! | `query/sim-batch-result` | CMIOT_API23M10 result of a batch job (`jobId`) | realname |
//!
//! GET and POST are both accepted, parameters in the query string. The simulator knows cards by
//! ICCID only (`msisdn`/`imsi` are refused as a parameter error).

use super::{Malformed, Refusal, admit, done};
use crate::SimState;
use crate::routes::{Injected, retry_after_secs};
use crate::stats::Outcome;
use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{NaiveDateTime, TimeZone};
use domain::{CarrierProtocol, NetworkStatus, PackageStatus, RealNameStatus};
use gateway::CallKind;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

const P: CarrierProtocol = CarrierProtocol::OneLink;

/// The envelope's `status` codes (`docs/carriers/onelink.md`, "Error codes").
pub(crate) mod code {
    pub(crate) const OK: &str = "0";
    /// `appid` unknown or `password` wrong (assumed code).
    pub(crate) const AUTH: &str = "12001";
    /// `transid` not `appid + yyyyMMddHHmmss + 8 digits` (assumed code).
    pub(crate) const TRANSID: &str = "12002";
    /// Request rate over the account's limit (assumed code).
    pub(crate) const THROTTLED: &str = "12010";
    /// The token is unknown or has lapsed (public clients renew on it).
    pub(crate) const TOKEN: &str = "12021";
    /// More cards than the batch limit (assumed code).
    pub(crate) const TOO_MANY: &str = "12034";
    /// The card's status does not allow the change (assumed code).
    pub(crate) const STATE: &str = "12035";
    /// A second status change of the card within the lock window (assumed code).
    pub(crate) const LOCKED: &str = "12036";
    /// A parameter missing or malformed (assumed code).
    pub(crate) const PARAM: &str = "12100";
    /// No such batch job (assumed code).
    pub(crate) const NO_JOB: &str = "12200";
    /// The card is not the customer's (code seen in public clients).
    pub(crate) const NO_CARD: &str = "11011";
    /// What `Malformed::UnknownStatus` answers where the call has no status field of its own.
    pub(crate) const UNDOCUMENTED: &str = "19999";
}

/// The card another card's answer is given under (`Malformed::WrongIccid`).
const OTHER_ICCID: &str = "89860000000000000000";

type Params = Query<HashMap<String, String>>;

pub(super) fn routes() -> Router<SimState> {
    Router::new()
        .route("/get/token", get(token).post(token))
        .route("/query/sim-real-name-status", get(realname).post(realname))
        .route(
            "/query/sim-real-name-status/batch",
            get(realname_batch).post(realname_batch),
        )
        .route("/query/sim-data-usage", get(usage).post(usage))
        .route(
            "/query/sim-data-usage/batch",
            get(usage_batch).post(usage_batch),
        )
        .route("/query/sim-status", get(status).post(status))
        .route(
            "/query/sim-status/batch",
            get(status_batch).post(status_batch),
        )
        .route("/query/sim-data-margin", get(margin).post(margin))
        .route("/change/sim-status", get(change).post(change))
        .route(
            "/change/sim-status/batch",
            get(change_batch).post(change_batch),
        )
        .route(
            "/query/sim-batch-result",
            get(batch_result).post(batch_result),
        )
}

// ---------------------------------------------------------------- answers

/// An answer that ends the handling early, with the outcome for the stats (boxed: an answer is
/// large).
type Fail = Box<(Outcome, Response)>;

/// What a handler answers, with the outcome for the stats; `Err` only to use `?`.
type Answer = Result<(Outcome, Response), Fail>;

fn envelope(status: &str, message: &str, result: Value) -> Response {
    Json(json!({ "status": status, "message": message, "result": result })).into_response()
}

fn ok(result: Vec<Value>) -> Response {
    envelope(code::OK, "正确", Value::Array(result))
}

fn fail(outcome: Outcome, status: &str, message: &str) -> Fail {
    Box::new((outcome, envelope(status, message, json!([]))))
}

fn throttled(secs: u64) -> Response {
    let mut r = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(json!({ "status": code::THROTTLED, "message": "请求过于频繁", "result": [] })),
    )
        .into_response();
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    r
}

fn http_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({ "status": status.as_u16().to_string(), "message": message, "result": [] })),
    )
        .into_response()
}

fn html() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>系统维护</title></head><body><h1>系统维护中，请稍后访问</h1></body></html>",
    )
        .into_response()
}

/// A request turned away before it was looked at, in the platform's words.
fn refused(st: &SimState, r: Refusal) -> Fail {
    let resp = match r {
        // The platform's own rate and concurrency limits: HTTP 200 with its code.
        Refusal::OverRate | Refusal::OverConcurrency => {
            envelope(code::THROTTLED, "接口调用频率超过限制", json!([]))
        }
        Refusal::Fault(f) => match f {
            Injected::TimedOut => http_error(StatusCode::GATEWAY_TIMEOUT, "Gateway Timeout"),
            Injected::Status(429) => throttled(retry_after_secs(st)),
            Injected::Throttled { retry_after_secs } => throttled(retry_after_secs),
            Injected::OverQuota => throttled(1),
            Injected::Unavailable => http_error(StatusCode::SERVICE_UNAVAILABLE, "服务暂不可用"),
            Injected::Status(c) => http_error(
                StatusCode::from_u16(c).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                "系统错误",
            ),
            Injected::Malformed(_) => html(),
        },
    };
    Box::new((r.outcome(), resp))
}

/// A request past the platform's door: the scripted malformed answer, if any, and the
/// platform's concurrent place held until the answer is built.
struct Admitted {
    malformed: Option<Malformed>,
    _in_flight: Option<crate::accounts::InFlight>,
}

async fn enter(st: &SimState, kind: CallKind) -> Result<Admitted, Fail> {
    match admit(st, P, kind).await {
        Ok(g) => Ok(Admitted {
            malformed: None,
            _in_flight: g,
        }),
        Err(Refusal::Fault(Injected::Malformed(m))) => Ok(Admitted {
            malformed: Some(m),
            _in_flight: None,
        }),
        Err(r) => Err(refused(st, r)),
    }
}

/// Runs a handler and records its outcome once.
fn finish(st: &SimState, answer: Answer) -> Response {
    let (outcome, resp) = answer.unwrap_or_else(|e| *e);
    done(st, outcome);
    resp
}

fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    q.get(name).map(|s| s.trim()).filter(|s| !s.is_empty())
}

/// `transid` = `appid` + `yyyyMMddHHmmss` + an 8-digit sequence.
fn transid_ok(appid: &str, transid: &str) -> bool {
    let Some(rest) = transid.strip_prefix(appid) else {
        return false;
    };
    rest.len() == 22
        && rest.bytes().all(|b| b.is_ascii_digit())
        && NaiveDateTime::parse_from_str(&rest[..14], "%Y%m%d%H%M%S").is_ok()
}

/// Admits a request made with a token: the door, the token, the `transid`.
async fn open(
    st: &SimState,
    kind: CallKind,
    q: &HashMap<String, String>,
) -> Result<Admitted, Fail> {
    let admitted = enter(st, kind).await?;
    let token = param(q, "token").unwrap_or("");
    if st.0.accounts.check_token(P, token) != super::TokenCheck::Valid {
        return Err(fail(
            Outcome::BadRequest,
            code::TOKEN,
            "token不存在或已过期",
        ));
    }
    let appid = st.0.accounts.credential(P, "appid").unwrap_or_default();
    if !transid_ok(&appid, param(q, "transid").unwrap_or("")) {
        return Err(fail(
            Outcome::BadRequest,
            code::TRANSID,
            "transid格式不正确",
        ));
    }
    if admitted.malformed == Some(Malformed::Html) {
        return Err(Box::new((Outcome::Error, html())));
    }
    Ok(admitted)
}

/// The one card a single-card request names.
fn one_card(q: &HashMap<String, String>) -> Result<String, Fail> {
    if let Some(i) = param(q, "iccid") {
        return Ok(i.to_owned());
    }
    let msg = if param(q, "msisdn").is_some() || param(q, "imsi").is_some() {
        "模拟平台仅支持以iccid查询"
    } else {
        "缺少参数iccid"
    };
    Err(fail(Outcome::BadRequest, code::PARAM, msg))
}

/// The cards of a batch request (`iccids=a_b_c`), within the account's batch limit.
fn batch_cards(st: &SimState, q: &HashMap<String, String>) -> Result<Vec<String>, Fail> {
    let Some(raw) = param(q, "iccids") else {
        let msg = if param(q, "msisdns").is_some() || param(q, "imsis").is_some() {
            "模拟平台仅支持以iccids查询"
        } else {
            "缺少参数iccids"
        };
        return Err(fail(Outcome::BadRequest, code::PARAM, msg));
    };
    let cards: Vec<String> = raw
        .split('_')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let limit = st.0.accounts.get(P).batch_limit;
    if cards.is_empty() {
        return Err(fail(Outcome::BadRequest, code::PARAM, "缺少参数iccids"));
    }
    if cards.len() > limit {
        return Err(fail(
            Outcome::BadRequest,
            code::TOO_MANY,
            &format!("单次办理号码数量不能超过{limit}个"),
        ));
    }
    Ok(cards)
}

/// Megabytes as the platform's KB (1 MB = 1024 KB), exactly, as a decimal text.
fn kb(mb: Decimal) -> String {
    mb.checked_mul(Decimal::from(1024))
        .unwrap_or(Decimal::MAX)
        .normalize()
        .to_string()
}

/// The platform's card status (OneLink-CT table): `2` 已激活, `4` 停机.
fn card_status(n: NetworkStatus) -> &'static str {
    match n {
        NetworkStatus::Online => "2",
        NetworkStatus::Stopped => "4",
    }
}

fn realname_word(r: RealNameStatus) -> &'static str {
    match r {
        RealNameStatus::Verified => "1",
        RealNameStatus::NotVerified => "0",
    }
}

fn last_change_date(st: &SimState, iccid: &str) -> String {
    let ms = st.card(iccid).map(|v| v.changed_at_ms).unwrap_or(0);
    chrono_tz::Asia::Shanghai
        .timestamp_millis_opt(ms as i64)
        .single()
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// A single-card answer `[item]`, malformed as scripted: `DropLast` an empty result,
/// `WrongIccid` an item naming another card.
fn single(item: Value, malformed: Option<Malformed>) -> (Outcome, Response) {
    match malformed {
        Some(Malformed::DropLast) => (Outcome::Error, ok(vec![])),
        Some(Malformed::WrongIccid) => {
            let mut item = item;
            if let Value::Object(m) = &mut item {
                m.insert("iccid".into(), Value::String(OTHER_ICCID.into()));
            }
            (Outcome::Error, ok(vec![item]))
        }
        Some(_) => (Outcome::Error, ok(vec![item])),
        None => (Outcome::Ok, ok(vec![item])),
    }
}

/// A batch answer, malformed as scripted: `DropLast` without its last card, `WrongIccid` the
/// first item naming another card.
fn batch(mut items: Vec<Value>, any_found: bool, malformed: Option<Malformed>) -> Answer {
    match malformed {
        Some(Malformed::DropLast) => {
            items.pop();
        }
        Some(Malformed::WrongIccid) => {
            if let Some(Value::Object(first)) = items.first_mut() {
                first.insert("iccid".into(), Value::String(OTHER_ICCID.into()));
            }
        }
        _ => {}
    }
    let outcome = match (malformed, any_found) {
        (Some(_), _) => Outcome::Error,
        (None, true) => Outcome::Ok,
        (None, false) => Outcome::NotFound,
    };
    Ok((outcome, ok(items)))
}

fn unknown_card(iccid: &str) -> Value {
    json!({ "iccid": iccid, "status": code::NO_CARD, "message": "号码不存在或不属于该集团" })
}

// ---------------------------------------------------------------- token

async fn token(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = token_answer(&st, &q).await;
    finish(&st, answer)
}

async fn token_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let admitted = enter(st, CallKind::Realname).await?;
    let appid = param(q, "appid").unwrap_or("");
    let password = param(q, "password").unwrap_or("");
    if !st.0.accounts.credential_is(P, "appid", appid)
        || !st.0.accounts.credential_is(P, "password", password)
    {
        return Err(fail(
            Outcome::BadRequest,
            code::AUTH,
            "APPID不存在或密码错误",
        ));
    }
    if !transid_ok(appid, param(q, "transid").unwrap_or("")) {
        return Err(fail(
            Outcome::BadRequest,
            code::TRANSID,
            "transid格式不正确",
        ));
    }
    if admitted.malformed == Some(Malformed::Html) {
        return Err(Box::new((Outcome::Error, html())));
    }
    let (token, ttl) = st.0.accounts.issue_token(P);
    Ok((
        Outcome::Ok,
        ok(vec![
            json!({ "token": token, "ttl": ttl.as_secs().to_string() }),
        ]),
    ))
}

// ---------------------------------------------------------------- real-name

async fn realname(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = realname_answer(&st, &q).await;
    finish(&st, answer)
}

async fn realname_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Realname, q).await?;
    let iccid = one_card(q)?;
    let Some(r) = st.0.fleet.realname(&iccid) else {
        return Err(fail(
            Outcome::NotFound,
            code::NO_CARD,
            "号码不存在或不属于该集团",
        ));
    };
    let word = if a.malformed == Some(Malformed::UnknownStatus) {
        "9"
    } else {
        realname_word(r)
    };
    Ok(single(json!({ "realNameStatus": word }), a.malformed))
}

async fn realname_batch(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = realname_batch_answer(&st, &q).await;
    finish(&st, answer)
}

async fn realname_batch_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Realname, q).await?;
    let cards = batch_cards(st, q)?;
    let mut any_found = false;
    let mut items = Vec::with_capacity(cards.len());
    for (i, iccid) in cards.iter().enumerate() {
        items.push(match st.0.fleet.realname(iccid) {
            Some(r) => {
                any_found = true;
                let word = if i == 0 && a.malformed == Some(Malformed::UnknownStatus) {
                    "9"
                } else {
                    realname_word(r)
                };
                json!({ "iccid": iccid, "status": code::OK, "message": "正确", "realNameStatus": word })
            }
            None => unknown_card(iccid),
        });
    }
    batch(items, any_found, a.malformed)
}

// ---------------------------------------------------------------- usage

async fn usage(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = usage_answer(&st, &q).await;
    finish(&st, answer)
}

async fn usage_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Usage, q).await?;
    let iccid = one_card(q)?;
    if a.malformed == Some(Malformed::UnknownStatus) {
        return Err(fail(Outcome::Error, code::UNDOCUMENTED, "未知错误"));
    }
    let Some((_, total)) = st.0.fleet.usage(&iccid, st.current_month()) else {
        return Err(fail(
            Outcome::NotFound,
            code::NO_CARD,
            "号码不存在或不属于该集团",
        ));
    };
    Ok(single(
        json!({ "dataAmount": kb(total), "apnUseAmountList": [] }),
        a.malformed,
    ))
}

async fn usage_batch(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = usage_batch_answer(&st, &q).await;
    finish(&st, answer)
}

async fn usage_batch_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Usage, q).await?;
    let cards = batch_cards(st, q)?;
    if a.malformed == Some(Malformed::UnknownStatus) {
        return Err(fail(Outcome::Error, code::UNDOCUMENTED, "未知错误"));
    }
    let month = st.current_month();
    let mut any_found = false;
    let mut items = Vec::with_capacity(cards.len());
    for iccid in &cards {
        items.push(match st.0.fleet.usage(iccid, month) {
            Some((_, total)) => {
                any_found = true;
                json!({ "iccid": iccid, "status": code::OK, "message": "正确", "dataAmount": kb(total) })
            }
            None => unknown_card(iccid),
        });
    }
    batch(items, any_found, a.malformed)
}

// ---------------------------------------------------------------- SIM status

async fn status(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = status_answer(&st, &q).await;
    finish(&st, answer)
}

async fn status_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Realname, q).await?;
    let iccid = one_card(q)?;
    let Some(n) = st.0.fleet.network(&iccid) else {
        return Err(fail(
            Outcome::NotFound,
            code::NO_CARD,
            "号码不存在或不属于该集团",
        ));
    };
    let word = if a.malformed == Some(Malformed::UnknownStatus) {
        "3"
    } else {
        card_status(n)
    };
    Ok(single(
        json!({ "cardStatus": word, "lastChangeDate": last_change_date(st, &iccid) }),
        a.malformed,
    ))
}

async fn status_batch(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = status_batch_answer(&st, &q).await;
    finish(&st, answer)
}

async fn status_batch_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Realname, q).await?;
    let cards = batch_cards(st, q)?;
    let mut any_found = false;
    let mut items = Vec::with_capacity(cards.len());
    for (i, iccid) in cards.iter().enumerate() {
        items.push(match st.0.fleet.network(iccid) {
            Some(n) => {
                any_found = true;
                let word = if i == 0 && a.malformed == Some(Malformed::UnknownStatus) {
                    "3"
                } else {
                    card_status(n)
                };
                json!({
                    "iccid": iccid, "status": code::OK, "message": "正确",
                    "cardStatus": word, "lastChangeDate": last_change_date(st, iccid),
                })
            }
            None => unknown_card(iccid),
        });
    }
    batch(items, any_found, a.malformed)
}

// ---------------------------------------------------------------- offerings' margin

async fn margin(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = margin_answer(&st, &q).await;
    finish(&st, answer)
}

/// The offerings in force (the fleet's `Active` packages): total, used and margin in KB. A
/// package without a limit has no `totalAmount` nor `remainAmount`.
async fn margin_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Packages, q).await?;
    let iccid = one_card(q)?;
    if a.malformed == Some(Malformed::UnknownStatus) {
        return Err(fail(Outcome::Error, code::UNDOCUMENTED, "未知错误"));
    }
    let Some(packages) = st.0.fleet.packages(&iccid) else {
        return Err(fail(
            Outcome::NotFound,
            code::NO_CARD,
            "号码不存在或不属于该集团",
        ));
    };
    let list: Vec<Value> = packages
        .iter()
        .filter(|p| p.status == PackageStatus::Active)
        .map(|p| {
            let mut m = json!({
                "offeringId": p.external_id,
                "offeringName": p.external_id,
                "apnName": "CMIOT",
                "useAmount": kb(p.used_mb),
            });
            if let (Some(limit), Value::Object(o)) = (p.limit_mb, &mut m) {
                o.insert("totalAmount".into(), Value::String(kb(limit)));
                o.insert(
                    "remainAmount".into(),
                    Value::String(kb((limit - p.used_mb).max(Decimal::ZERO))),
                );
            }
            m
        })
        .collect();
    Ok(single(json!({ "accmMarginList": list }), a.malformed))
}

// ---------------------------------------------------------------- status change

async fn change(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = change_answer(&st, &q).await;
    finish(&st, answer)
}

/// `operType` of the single change: `0` stop (已激活 → 已停机), `1` resume (已停机 → 已激活). The
/// other documented values (lifecycle moves out of inventory or test) are not simulated.
fn single_oper(q: &HashMap<String, String>) -> Option<CallKind> {
    match param(q, "operType") {
        Some("0") => Some(CallKind::Stop),
        Some("1") => Some(CallKind::Start),
        _ => None,
    }
}

fn target_of(kind: CallKind) -> NetworkStatus {
    if kind == CallKind::Stop {
        NetworkStatus::Stopped
    } else {
        NetworkStatus::Online
    }
}

static ORDERS: AtomicU64 = AtomicU64::new(1);

async fn change_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let oper = single_oper(q);
    // Counted before any fault, as every stop/start request naming the card.
    if let (Some(kind), Some(iccid)) = (oper, param(q, "iccid")) {
        st.0.fleet.count_command(iccid, kind);
    }
    let a = open(st, oper.unwrap_or(CallKind::Stop), q).await?;
    let iccid = one_card(q)?;
    let Some(kind) = oper else {
        return Err(fail(Outcome::BadRequest, code::PARAM, "operType取值错误"));
    };
    if a.malformed == Some(Malformed::UnknownStatus) {
        return Err(fail(Outcome::Error, code::UNDOCUMENTED, "未知错误"));
    }
    let Some(now) = st.0.fleet.network(&iccid) else {
        return Err(fail(
            Outcome::NotFound,
            code::NO_CARD,
            "号码不存在或不属于该集团",
        ));
    };
    if now == target_of(kind) {
        return Err(fail(
            Outcome::BadRequest,
            code::STATE,
            "当前卡状态不允许办理该业务",
        ));
    }
    if let Err(left) = st.0.accounts.take_change_lock(P, &iccid) {
        return Err(fail(
            Outcome::BadRequest,
            code::LOCKED,
            &format!("同一号码在限制时间内不能重复办理该业务，请{left}秒后再试"),
        ));
    }
    st.0.fleet.set_network(&iccid, kind);
    let order = format!("{:020}", ORDERS.fetch_add(1, Ordering::SeqCst));
    Ok(single(json!({ "orderNum": order }), a.malformed))
}

// ---------------------------------------------------------------- batch change and its job

/// One batch job's results: (iccid, status, message) per card, and how often it was asked for.
#[derive(Debug)]
struct Job {
    results: Vec<(String, &'static str, &'static str)>,
    polls: u32,
}

/// Jobs of every simulator of the process, by number (ids are unique process-wide); the oldest
/// are forgotten beyond [`MAX_JOBS`].
static JOBS: LazyLock<Mutex<BTreeMap<u64, Job>>> = LazyLock::new(|| Mutex::new(BTreeMap::new()));
static JOB_IDS: AtomicU64 = AtomicU64::new(1);
const MAX_JOBS: usize = 10_000;

/// `operType` of the batch change: `9` 已激活 → 已停机, `11` 已停机 → 已激活.
fn batch_oper(q: &HashMap<String, String>) -> Option<CallKind> {
    match param(q, "operType") {
        Some("9") => Some(CallKind::Stop),
        Some("11") => Some(CallKind::Start),
        _ => None,
    }
}

async fn change_batch(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = change_batch_answer(&st, &q).await;
    finish(&st, answer)
}

/// Refuses the whole call when one card changed within the lock window (as documented: the
/// others fail with it). The cards before the locked one keep their lock record here (the
/// accounts have no look-without-taking); the platform would not record them.
async fn change_batch_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let oper = batch_oper(q);
    if let (Some(kind), Some(raw)) = (oper, param(q, "iccids")) {
        for iccid in raw.split('_').filter(|s| !s.is_empty()) {
            st.0.fleet.count_command(iccid, kind);
        }
    }
    let a = open(st, oper.unwrap_or(CallKind::Stop), q).await?;
    let cards = batch_cards(st, q)?;
    let Some(kind) = oper else {
        return Err(fail(Outcome::BadRequest, code::PARAM, "operType取值错误"));
    };
    if param(q, "reason").is_none() {
        return Err(fail(
            Outcome::BadRequest,
            code::PARAM,
            "停复机原因reason必填",
        ));
    }
    if a.malformed == Some(Malformed::UnknownStatus) {
        return Err(fail(Outcome::Error, code::UNDOCUMENTED, "未知错误"));
    }
    let target = target_of(kind);
    let changing: Vec<&String> = cards
        .iter()
        .filter(|c| st.0.fleet.network(c).is_some_and(|n| n != target))
        .collect();
    for iccid in &changing {
        if let Err(left) = st.0.accounts.take_change_lock(P, iccid) {
            return Err(fail(
                Outcome::BadRequest,
                code::LOCKED,
                &format!("号码{iccid}在限制时间内已办理过该业务，请{left}秒后再试"),
            ));
        }
    }
    let mut results = Vec::with_capacity(cards.len());
    for iccid in &cards {
        let r = match st.0.fleet.network(iccid) {
            None => (iccid.clone(), code::NO_CARD, "号码不存在或不属于该集团"),
            Some(n) if n == target => (iccid.clone(), code::STATE, "当前卡状态不允许办理该业务"),
            Some(_) => {
                st.0.fleet.set_network(iccid, kind);
                (iccid.clone(), code::OK, "成功")
            }
        };
        results.push(r);
    }
    let id = JOB_IDS.fetch_add(1, Ordering::SeqCst);
    {
        let mut jobs = JOBS.lock().unwrap_or_else(|p| p.into_inner());
        while jobs.len() >= MAX_JOBS {
            jobs.pop_first();
        }
        jobs.insert(id, Job { results, polls: 0 });
    }
    let outcome = if a.malformed.is_some() {
        Outcome::Error
    } else {
        Outcome::Ok
    };
    Ok((outcome, ok(vec![json!({ "jobId": id.to_string() })])))
}

async fn batch_result(State(st): State<SimState>, Query(q): Params) -> Response {
    let answer = batch_result_answer(&st, &q).await;
    finish(&st, answer)
}

/// The first query of a job answers it in progress (`jobStatus` `1`); later ones `2` (all done)
/// or `3` (done, some cards failed) with `resultList` (`resultType` `2`: `resultId` is an ICCID).
async fn batch_result_answer(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Realname, q).await?;
    let Some(id) = param(q, "jobId").and_then(|s| s.parse::<u64>().ok()) else {
        return Err(fail(Outcome::BadRequest, code::PARAM, "缺少参数jobId"));
    };
    let mut jobs = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let Some(job) = jobs.get_mut(&id) else {
        return Err(fail(Outcome::NotFound, code::NO_JOB, "任务不存在"));
    };
    job.polls += 1;
    if job.polls == 1 {
        return Ok((Outcome::Ok, ok(vec![json!({ "jobStatus": "1" })])));
    }
    let mut list: Vec<Value> = job
        .results
        .iter()
        .map(|(iccid, status, message)| {
            json!({ "resultType": "2", "resultId": iccid, "status": status, "message": message })
        })
        .collect();
    let all_ok = job.results.iter().all(|(_, s, _)| *s == code::OK);
    drop(jobs);
    let mut job_status = if all_ok { "2" } else { "3" };
    match a.malformed {
        Some(Malformed::DropLast) => {
            list.pop();
        }
        Some(Malformed::WrongIccid) => {
            if let Some(Value::Object(first)) = list.first_mut() {
                first.insert("resultId".into(), Value::String(OTHER_ICCID.into()));
            }
        }
        Some(Malformed::UnknownStatus) => job_status = "7",
        _ => {}
    }
    let outcome = if a.malformed.is_some() {
        Outcome::Error
    } else {
        Outcome::Ok
    };
    Ok((
        outcome,
        ok(vec![json!({ "jobStatus": job_status, "resultList": list })]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn transid_is_appid_stamp_and_sequence() {
        assert!(transid_ok("A1", "A12026040112000000000001"));
        assert!(!transid_ok("A1", "A1202604011200000000001"));
        assert!(!transid_ok("A1", "B12026040112000000000001"));
        assert!(!transid_ok("A1", "A12026139912000000000001"));
    }

    #[test]
    fn megabytes_become_exact_kilobytes() {
        assert_eq!(kb(dec!(1)), "1024");
        assert_eq!(kb(dec!(100.5)), "102912");
        assert_eq!(kb(dec!(0.0009765625)), "1");
        assert_eq!(kb(dec!(0)), "0");
    }
}
