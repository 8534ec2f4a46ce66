//! The platform's answers as the simulator renders them: the JSON envelope and its codes, the
//! gateway's refusals and the fault rendering, the HTML page of a proxy, LC002's XML, the
//! products' offers, and the batch bodies' numbers.

use super::{Malformed, P, Refusal, done};
use crate::SimState;
use crate::routes::{Injected, retry_after_secs};
use crate::stats::Outcome;
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::FixedOffset;
use domain::{CarrierPackage, PackageStatus};
use serde::Deserialize;
use serde_json::{Value, json};

/// The gateway's and the platform's codes (`code` of the JSON envelope).
pub(super) mod code {
    pub(crate) const OK: i64 = 0;
    pub(crate) const APP_KEY: i64 = 10001;
    pub(crate) const SIGN: i64 = 10002;
    pub(crate) const TIMESTAMP: i64 = 10003;
    pub(crate) const THROTTLED: i64 = 10004;
    pub(crate) const PARAM: i64 = 10006;
    pub(crate) const TOO_MANY: i64 = 10007;
    pub(crate) const NO_SUCH_NUMBER: i64 = 10008;
}

/// The number another card's answer is given under (`Malformed::WrongIccid`).
pub(super) const OTHER_NUMBER: &str = "89860000000000000000";

pub(super) fn envelope(code: i64, msg: &str, data: Value) -> Response {
    Json(json!({ "code": code, "msg": msg, "data": data })).into_response()
}

pub(super) fn gateway_refusal(status: StatusCode, code: i64, msg: &str) -> Response {
    (status, Json(json!({ "code": code, "msg": msg }))).into_response()
}

fn throttled(secs: u64) -> Response {
    let mut r = gateway_refusal(
        StatusCode::TOO_MANY_REQUESTS,
        code::THROTTLED,
        "请求过于频繁，请稍后再试",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    r
}

pub(super) fn html() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>系统维护</title></head><body><h1>系统维护中，请稍后访问</h1></body></html>",
    )
        .into_response()
}

/// A refusal before the request is looked at, in the gateway's words.
pub(super) fn refused(st: &SimState, r: Refusal) -> Response {
    let resp = match r {
        Refusal::OverRate | Refusal::OverConcurrency => throttled(1),
        Refusal::Fault(f) => match f {
            Injected::TimedOut => {
                gateway_refusal(StatusCode::GATEWAY_TIMEOUT, 504, "Gateway Timeout")
            }
            Injected::Status(429) => throttled(retry_after_secs(st)),
            Injected::Throttled { retry_after_secs } => throttled(retry_after_secs),
            Injected::OverQuota => throttled(1),
            Injected::Unavailable => {
                gateway_refusal(StatusCode::SERVICE_UNAVAILABLE, 503, "服务暂不可用")
            }
            Injected::Status(c) => gateway_refusal(
                StatusCode::from_u16(c).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                i64::from(c),
                "系统异常",
            ),
            // Answered by the handler: a malformed success answer.
            Injected::Malformed(_) => html(),
        },
    };
    done(st, r.outcome());
    resp
}

/// The outcome of an answer given: a scripted malformed one is an error, otherwise whether
/// the card (any card of a batch) was known.
pub(super) fn outcome(malformed: Option<Malformed>, found: bool) -> Outcome {
    match (malformed, found) {
        (Some(_), _) => Outcome::Error,
        (None, true) => Outcome::Ok,
        (None, false) => Outcome::NotFound,
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchBody {
    #[serde(default)]
    access_number: Option<Vec<String>>,
    #[serde(default)]
    access_numbers: Option<Vec<String>>,
}

/// The numbers of a batch body (`accessNumber` of BQ019 and the usage query, `accessNumbers` of
/// BQ020), or the platform's refusal.
pub(super) fn numbers(
    st: &SimState,
    body: &[u8],
    field: &str,
) -> Result<Vec<String>, Box<Response>> {
    let refuse = |code: i64, msg: String| Box::new(envelope(code, &msg, Value::Null));
    let parsed: BatchBody = serde_json::from_slice(body)
        .map_err(|e| refuse(code::PARAM, format!("请求参数错误: {e}")))?;
    let list = match field {
        "accessNumber" => parsed.access_number,
        _ => parsed.access_numbers,
    }
    .ok_or_else(|| refuse(code::PARAM, format!("缺少参数 {field}")))?;
    let limit = st.0.accounts.get(P).batch_limit;
    if list.len() > limit {
        return Err(refuse(
            code::TOO_MANY,
            format!("单次查询号码数量不能超过{limit}个"),
        ));
    }
    Ok(list)
}

/// A status query's item: `(code, name)` of the card's status under `keys`, `None` for no such
/// card (`-1` 号码不存在); `unknown` is the code a scripted unknown status answers.
pub(super) fn status_item(
    number: &str,
    keys: [&str; 2],
    unknown: &str,
    status: Option<(&str, &str)>,
    m: Option<Malformed>,
) -> (Value, bool) {
    let (code, name, found) = match status {
        _ if m == Some(Malformed::UnknownStatus) => (unknown, "", true),
        Some((code, name)) => (code, name, true),
        None => ("-1", "号码不存在", false),
    };
    let [code_key, name_key] = keys;
    (
        json!({ "accessNumber": number, code_key: code, name_key: name }),
        found,
    )
}

fn package_status(s: PackageStatus) -> &'static str {
    match s {
        PackageStatus::Pending => "0",
        PackageStatus::Active => "1",
        PackageStatus::Expired => "2",
        PackageStatus::Cancelled => "3",
    }
}

fn beijing(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    let Some(tz) = FixedOffset::east_opt(8 * 3600) else {
        return String::new();
    };
    t.map(|t| t.with_timezone(&tz).format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// One offer of the products' answer.
pub(super) fn offer(p: &CarrierPackage) -> Value {
    json!({
        "offerId": p.external_id,
        "status": package_status(p.status),
        "unit": "MB",
        "usedAmount": p.used_mb.to_string(),
        "totalAmount": p.limit_mb.map(|l| l.to_string()).unwrap_or_default(),
        "effDate": beijing(p.activated_at),
        "expDate": beijing(p.expires_at),
    })
}

/// LC002's XML answer: `RESULT` and `RESULTMSG` (none: left out), `ACCESS_NUMBER`.
pub(super) fn xml(result: Option<&str>, msg: &str, number: &str) -> Response {
    let mut body = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?><SvcCont>");
    if let Some(r) = result {
        body.push_str(&format!("<RESULT>{r}</RESULT><RESULTMSG>{msg}</RESULTMSG>"));
    }
    body.push_str(&format!(
        "<ACCESS_NUMBER>{number}</ACCESS_NUMBER><GROUP_TRANSACTIONID>1000000190{:010}</GROUP_TRANSACTIONID></SvcCont>",
        crate::wall_second() % 10_000_000_000
    ));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/xml;charset=UTF-8")],
        body,
    )
        .into_response()
}
