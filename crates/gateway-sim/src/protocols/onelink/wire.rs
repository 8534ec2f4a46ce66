//! How the platform answers: the envelope and its status codes, the refusals, the pages of an
//! injected fault, the units and status words, and the malformed answers a script asks for.

use crate::SimState;
use crate::protocols::{Malformed, Refusal};
use crate::routes::{Injected, retry_after_secs};
use crate::stats::Outcome;
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::TimeZone;
use domain::{NetworkStatus, RealNameStatus};
use rust_decimal::Decimal;
use serde_json::{Value, json};

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

/// The message of [`code::NO_CARD`].
pub(super) const NO_CARD_MESSAGE: &str = "号码不存在或不属于该集团";

/// The card another card's answer is given under (`Malformed::WrongIccid`).
const OTHER_ICCID: &str = "89860000000000000000";

/// An answer that ends the handling early, with the outcome for the stats (boxed: an answer is
/// large).
pub(super) type Fail = Box<(Outcome, Response)>;

/// What a handler answers, with the outcome for the stats; `Err` only to use `?`.
pub(super) type Answer = Result<(Outcome, Response), Fail>;

fn envelope(status: &str, message: &str, result: Value) -> Response {
    Json(json!({ "status": status, "message": message, "result": result })).into_response()
}

pub(super) fn ok(result: Vec<Value>) -> Response {
    envelope(code::OK, "正确", Value::Array(result))
}

pub(super) fn fail(outcome: Outcome, status: &str, message: &str) -> Fail {
    Box::new((outcome, envelope(status, message, json!([]))))
}

/// The card is unknown.
pub(super) fn no_card() -> Fail {
    fail(Outcome::NotFound, code::NO_CARD, NO_CARD_MESSAGE)
}

/// A path the platform does not have (an *assumed* call it does not serve): HTTP 404.
pub(super) fn not_found() -> Fail {
    Box::new((
        Outcome::NotFound,
        http_error(StatusCode::NOT_FOUND, "接口不存在"),
    ))
}

/// A status code outside the documented table (`Malformed::UnknownStatus`).
pub(super) fn undocumented() -> Fail {
    fail(Outcome::Error, code::UNDOCUMENTED, "未知错误")
}

/// `operType` is none of the call's.
pub(super) fn bad_oper() -> Fail {
    fail(Outcome::BadRequest, code::PARAM, "operType取值错误")
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

pub(super) fn html() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>系统维护</title></head><body><h1>系统维护中，请稍后访问</h1></body></html>",
    )
        .into_response()
}

/// A request turned away before it was looked at, in the platform's words.
pub(super) fn refused(st: &SimState, r: Refusal) -> Fail {
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

/// Megabytes as the platform's KB (1 MB = 1024 KB), exactly, as a decimal text.
pub(super) fn kb(mb: Decimal) -> String {
    mb.checked_mul(Decimal::from(1024))
        .unwrap_or(Decimal::MAX)
        .normalize()
        .to_string()
}

/// The platform's card status (OneLink-CT table): `2` 已激活, `4` 停机.
pub(super) fn card_status(n: NetworkStatus) -> &'static str {
    match n {
        NetworkStatus::Online => "2",
        NetworkStatus::Stopped => "4",
    }
}

pub(super) fn realname_word(r: RealNameStatus) -> &'static str {
    match r {
        RealNameStatus::Verified => "1",
        RealNameStatus::NotVerified => "0",
    }
}

/// `word`, or `bogus` (a word outside the table) when the script asks for `UnknownStatus`.
pub(super) fn status_word(
    malformed: Option<Malformed>,
    bogus: &'static str,
    word: &'static str,
) -> &'static str {
    if malformed == Some(Malformed::UnknownStatus) {
        bogus
    } else {
        word
    }
}

pub(super) fn last_change_date(st: &SimState, iccid: &str) -> String {
    let ms = st.card(iccid).map(|v| v.changed_at_ms).unwrap_or(0);
    chrono_tz::Asia::Shanghai
        .timestamp_millis_opt(ms as i64)
        .single()
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// The outcome of an answer built as scripted: an error when malformed, else `otherwise`.
pub(super) fn outcome(malformed: Option<Malformed>, otherwise: Outcome) -> Outcome {
    if malformed.is_some() {
        Outcome::Error
    } else {
        otherwise
    }
}

/// Answer items malformed as scripted: `DropLast` without the last, `WrongIccid` the first
/// naming another card in its `field`; the other kinds leave them.
pub(super) fn spoil(items: &mut Vec<Value>, malformed: Option<Malformed>, field: &str) {
    match malformed {
        Some(Malformed::DropLast) => {
            items.pop();
        }
        Some(Malformed::WrongIccid) => {
            if let Some(Value::Object(first)) = items.first_mut() {
                first.insert(field.into(), Value::String(OTHER_ICCID.into()));
            }
        }
        _ => {}
    }
}

/// A single-card answer `[item]`, malformed as scripted: `DropLast` an empty result,
/// `WrongIccid` an item naming another card.
pub(super) fn single(item: Value, malformed: Option<Malformed>) -> (Outcome, Response) {
    let mut items = vec![item];
    spoil(&mut items, malformed, "iccid");
    (outcome(malformed, Outcome::Ok), ok(items))
}

/// A batch answer over `cards`: per card, the `fields` of a known card (the first card's call
/// sees the scripted malformed answer) with its `iccid` and status `0`, or the refusal of a card
/// unknown; malformed as scripted ([`spoil`]).
pub(super) fn batch(
    cards: &[String],
    malformed: Option<Malformed>,
    mut fields: impl FnMut(&str, Option<Malformed>) -> Option<Value>,
) -> Answer {
    let mut any_found = false;
    let mut items = Vec::with_capacity(cards.len());
    for (i, iccid) in cards.iter().enumerate() {
        let shown = if i == 0 { malformed } else { None };
        items.push(match fields(iccid, shown) {
            Some(extra) => {
                any_found = true;
                let mut item = json!({ "iccid": iccid, "status": code::OK, "message": "正确" });
                if let (Value::Object(m), Value::Object(extra)) = (&mut item, extra) {
                    m.extend(extra);
                }
                item
            }
            None => json!({ "iccid": iccid, "status": code::NO_CARD, "message": NO_CARD_MESSAGE }),
        });
    }
    spoil(&mut items, malformed, "iccid");
    let found = if any_found {
        Outcome::Ok
    } else {
        Outcome::NotFound
    };
    Ok((outcome(malformed, found), ok(items)))
}
