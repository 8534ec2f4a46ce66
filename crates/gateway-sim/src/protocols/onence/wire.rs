//! Answers in the platform's words: the error shapes, the refusals of admission and injected
//! faults, the SIM, usage record and data quota bodies.

use crate::SimState;
use crate::protocols::{Malformed, Refusal, SimCardView};
use crate::routes::{Injected, retry_after_secs};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, Utc};
use domain::{CarrierPackage, NetworkStatus, PackageStatus};
use rust_decimal::Decimal;
use serde_json::{Value, json};

pub(super) fn json_answer(status: StatusCode, body: &Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// A JSON body written as text (numbers must keep their exact decimal digits).
pub(super) fn raw_json(status: StatusCode, text: String) -> Response {
    let mut resp = (status, text).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json;charset=UTF-8"),
    );
    resp
}

/// The error shape of the SIM endpoints (`NotFound`, `BadRequest`, `InternalServerError`, ...).
pub(super) fn sim_error(status: StatusCode, message: impl Into<String>) -> Response {
    let token = match status.as_u16() {
        400 => "BadRequest",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        422 => "UnprocessableEntity",
        500 => "InternalServerError",
        502 => "BadGateway",
        503 => "ServiceUnavailable",
        504 => "GatewayTimeout",
        _ => "Error",
    };
    json_answer(
        status,
        &json!({"error_code": 1000, "error_token": token, "message": message.into()}),
    )
}

/// The error shape of the token endpoint (`Bearer_Token_400`).
pub(super) fn token_error(error_code: &str, message: &str) -> Response {
    json_answer(
        StatusCode::BAD_REQUEST,
        &json!({"statusCode": 400, "errorCode": error_code, "message": message}),
    )
}

pub(super) fn unauthorized() -> Response {
    json_answer(
        StatusCode::UNAUTHORIZED,
        &json!({"message": "Unauthorized"}),
    )
}

fn too_many(retry_after: Option<u64>) -> Response {
    let mut resp = json_answer(
        StatusCode::TOO_MANY_REQUESTS,
        &json!({"message": "Too Many Requests"}),
    );
    if let Some(secs) = retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

pub(super) fn html_page() -> Response {
    let mut resp = (
        StatusCode::OK,
        "<!DOCTYPE html><html><head><title>1NCE Portal - Maintenance</title></head>\
         <body><h1>We are performing scheduled maintenance.</h1></body></html>",
    )
        .into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    resp
}

/// A request turned away before the platform looked at it.
pub(super) fn refused(st: &SimState, r: Refusal) -> Response {
    match r {
        Refusal::OverRate | Refusal::OverConcurrency => too_many(None),
        Refusal::Fault(f) => match f {
            Injected::TimedOut => {
                sim_error(StatusCode::GATEWAY_TIMEOUT, "Endpoint request timed out")
            }
            Injected::Status(429) => too_many(Some(retry_after_secs(st))),
            Injected::Status(401) => unauthorized(),
            Injected::Status(code) => sim_error(
                StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                format!("scripted failure {code}"),
            ),
            Injected::Throttled { retry_after_secs } => too_many(Some(retry_after_secs)),
            Injected::OverQuota => too_many(Some(1)),
            Injected::Unavailable => {
                sim_error(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable")
            }
            // Rendered by each endpoint; never reaches here.
            Injected::Malformed(_) => html_page(),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// The SIM resource.

/// The Luhn check digit of a digit string (`iccid_with_luhn`).
pub(super) fn luhn_digit(digits: &str) -> Option<u32> {
    let mut sum = 0;
    for (i, c) in digits.chars().rev().enumerate() {
        let mut d = c.to_digit(10)?;
        if i % 2 == 0 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    Some((10 - sum % 10) % 10)
}

fn status_word(n: NetworkStatus) -> &'static str {
    match n {
        NetworkStatus::Online => "Enabled",
        NetworkStatus::Stopped => "Disabled",
    }
}

/// The quota the card's packages stand for: its first active package, else its first.
pub(super) fn data_quota(packages: &[CarrierPackage]) -> Option<&CarrierPackage> {
    packages
        .iter()
        .find(|p| p.status == PackageStatus::Active)
        .or_else(|| packages.first())
}

/// `(total_volume, volume)` of a package, exact.
fn volumes(p: &CarrierPackage) -> (Decimal, Decimal) {
    let total = p.limit_mb.unwrap_or(p.used_mb);
    (total, total - p.used_mb)
}

/// A SIM as `GET /v1/sims/{iccid}` and the list show it.
pub(super) fn sim_json(v: &SimCardView, malformed: Option<Malformed>) -> Value {
    let iccid = match malformed {
        Some(Malformed::WrongIccid) => other_iccid(&v.iccid),
        _ => v.iccid.clone(),
    };
    let status = match malformed {
        Some(Malformed::UnknownStatus) => "Suspended",
        _ => status_word(v.network_status),
    };
    let luhn = luhn_digit(&iccid)
        .map(|d| format!("{iccid}{d}"))
        .unwrap_or_else(|| iccid.clone());
    let tail: String = v
        .iccid
        .chars()
        .rev()
        .take(9)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let quota = data_quota(&v.packages);
    // The quota as a JSON number with its exact digits.
    let current_quota = quota
        .and_then(|p| serde_json::from_str::<Value>(&volumes(p).0.normalize().to_string()).ok())
        .unwrap_or(Value::from(0));
    json!({
        "iccid": iccid,
        "iccid_with_luhn": luhn,
        "imsi": format!("901405{tail:0>9}"),
        "imsi_2": format!("901405{tail:0>9}"),
        "current_imsi": format!("901405{tail:0>9}"),
        "msisdn": format!("882285{tail:0>9}"),
        "imei": "",
        "imei_lock": false,
        "status": status,
        "activation_date": "2024-01-01T00:00:00.000+0000",
        "ip_address": "100.100.100.18",
        "current_quota": current_quota,
        "quota_status": {"id": 0, "description": "More than 20% available"},
        "current_quota_SMS": 250,
        "quota_status_SMS": {"id": 0, "description": "More than 20% available"},
        "label": "",
    })
}

/// Another card's ICCID: the same length, the last digit changed.
pub(super) fn other_iccid(iccid: &str) -> String {
    let mut s = iccid.to_owned();
    match s.pop() {
        Some('9') => s.push('0'),
        Some(c) if c.is_ascii_digit() => s.push(char::from(c as u8 + 1)),
        _ => s.push('X'),
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Usage and quota.

/// One day's record of `GET /v1/sims/{iccid}/usage`: `mb` of data, no SMS.
pub(super) fn day_record(day: NaiveDate, mb: Decimal) -> Value {
    let volume = mb.to_string();
    json!({
        "date": format!("{}T00:00:00.000Z", day.format("%Y-%m-%d")),
        "data": {
            "cost": volume,
            "currency": {"id": 1, "symbol": "€", "code": "EUR"},
            "traffic_type": {"description": "Data", "id": 5, "unit": "MB"},
            "volume": volume,
            "volume_rx": volume,
            "volume_tx": "0",
        },
        "sms": {
            "cost": "0",
            "currency": {"id": 1, "symbol": "€", "code": "EUR"},
            "traffic_type": {"description": "SMS", "id": 6, "unit": "SMS"},
            "volume": "0",
            "volume_rx": "0",
            "volume_tx": "0",
        },
    })
}

/// The body of `GET /v1/sims/{iccid}/quota/data` for the package `p`, written as text: the
/// volumes keep their exact decimal digits as JSON numbers.
pub(super) fn quota_body(p: &CarrierPackage) -> String {
    let (total, left) = volumes(p);
    let text = |v: &Option<DateTime<Utc>>| {
        v.map(|t| {
            serde_json::to_string(&t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
                .unwrap_or_else(|_| "null".to_owned())
        })
    };
    let mut body = format!(
        "{{\"volume\":{},\"total_volume\":{},\"last_volume_added\":{},\"threshold_percentage\":20,\"peak_throughput\":1000000",
        left.normalize(),
        total.normalize(),
        total.normalize(),
    );
    if let Some(e) = text(&p.expires_at) {
        body.push_str(&format!(",\"expiry_date\":{e}"));
    }
    if let Some(a) = text(&p.activated_at) {
        body.push_str(&format!(",\"last_status_change_date\":{a}"));
    }
    body.push('}');
    body
}
