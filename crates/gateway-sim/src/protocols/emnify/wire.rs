//! Answers in emnify's words: the error representation, the refusals, the SIM, statistics and
//! quota objects.

use super::super::{Malformed, Refusal};
use super::ids::{iccid_forms, sim_id_of};
use crate::SimState;
use crate::routes::Injected;
use crate::stats::Outcome;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use domain::{CarrierPackage, NetworkStatus, PackageStatus};
use rust_decimal::Decimal;
use serde_json::json;

/// How emnify writes a time.
const STAMP: &str = "%Y-%m-%dT%H:%M:%S%.3f+0000";

/// `{error_code, error_token, message}`: the documented error representation.
pub(super) fn error(
    status: StatusCode,
    code: u32,
    token: &str,
    message: impl Into<String>,
) -> Response {
    (
        status,
        axum::Json(json!({
            "error_code": code,
            "error_token": token,
            "message": message.into(),
        })),
    )
        .into_response()
}

pub(super) fn not_found(message: impl Into<String>) -> Response {
    error(StatusCode::NOT_FOUND, 1201, "NotFound", message)
}

fn too_many(retry_after_secs: u64) -> Response {
    let mut r = error(
        StatusCode::TOO_MANY_REQUESTS,
        1105,
        "TooManyRequests",
        "Too many requests",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    r
}

/// emnify's input validation failure (1400) as `status`.
pub(super) fn input_invalid(status: StatusCode, message: impl Into<String>) -> Response {
    error(status, 1400, "InputValidationFailed", message)
}

/// [`input_invalid`] as 422, the documented status.
pub(super) fn validation(message: impl Into<String>) -> Response {
    input_invalid(StatusCode::UNPROCESSABLE_ENTITY, message)
}

/// 401 "Invalid token".
pub(super) fn invalid_token() -> Response {
    error(
        StatusCode::UNAUTHORIZED,
        1102,
        "InvalidToken",
        "Invalid token",
    )
}

/// `{message}` alone: the gateway's own answers in front of the platform.
fn message(status: StatusCode, text: &str) -> Response {
    (status, axum::Json(json!({ "message": text }))).into_response()
}

/// `{}`: an answer with every field dropped.
pub(super) fn empty_object() -> Response {
    raw_json(StatusCode::OK, "{}".to_owned())
}

pub(super) fn html() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>Maintenance</title></head>\
         <body><h1>emnify is down for maintenance</h1></body></html>",
    )
        .into_response()
}

/// A JSON body written as text, so that decimal figures keep every digit (no float).
pub(super) fn raw_json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A refusal before the request was looked at, in emnify's words, with its outcome.
pub(super) fn refusal(st: &SimState, r: Refusal) -> (Outcome, Response) {
    let resp = match r {
        Refusal::OverRate | Refusal::OverConcurrency => too_many(1),
        Refusal::Fault(f) => match f {
            Injected::TimedOut => {
                message(StatusCode::GATEWAY_TIMEOUT, "Endpoint request timed out")
            }
            Injected::Status(429) => too_many(crate::routes::retry_after_secs(st)),
            Injected::Throttled { retry_after_secs } => too_many(retry_after_secs),
            Injected::OverQuota => too_many(1),
            Injected::Unavailable => {
                message(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable")
            }
            Injected::Status(401) => invalid_token(),
            Injected::Status(403) => error(
                StatusCode::FORBIDDEN,
                1104,
                "Forbidden",
                "You do not have the necessary permissions to access this entry point.",
            ),
            Injected::Status(404) => not_found("Resource not found"),
            Injected::Status(code) if code >= 500 => {
                let status =
                    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                message(status, "Internal server error")
            }
            Injected::Status(code) => {
                let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
                input_invalid(status, "scripted failure")
            }
            // Callers render malformed answers themselves; reaching here is a bug: a 500.
            Injected::Malformed(_) => {
                message(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
            }
        },
    };
    (r.outcome(), resp)
}

/// The status table (`GET /api/v1/sim/status`).
pub(super) const STATUSES: [(u8, &str); 5] = [
    (0, "Issued"),
    (1, "Activated"),
    (2, "Suspended"),
    (3, "Deleted"),
    (4, "Factory Test"),
];

fn status_of(network: NetworkStatus) -> (u8, &'static str) {
    match network {
        NetworkStatus::Online => (1, "Activated"),
        NetworkStatus::Stopped => (2, "Suspended"),
    }
}

/// A SIM object as the documents show it; `named` is the ICCID the answer names (another one
/// for `wrong_iccid`), `status` the status to show.
pub(super) fn sim_object(named: &str, status: (u64, &str)) -> serde_json::Value {
    let id = sim_id_of(named);
    let (iccid, with_luhn) = iccid_forms(named);
    json!({
        "id": id,
        "iccid": iccid,
        "iccid_with_luhn": with_luhn,
        "eid": null,
        "production_date": "2024-01-15T08:47:00+0000",
        "activation_date": "2024-02-01T10:00:00+0000",
        "status": {"id": status.0, "description": status.1},
        "customer_org": {"id": 13, "name": "Enterprise", "country": {"id": 205, "name": "United Kingdom"}},
        "issuer_org": {"id": 11, "name": "emnify", "country": {"id": 74, "name": "Germany"}},
        "reseller_org": null,
        "endpoint": {"id": id, "name": format!("sim-{iccid}")},
        "imsi": format!("2950500{:08}", id % 100_000_000),
        "msisdn": format!("4237{:08}", id % 100_000_000),
        "model": {"id": 1, "description": "Java smartcard", "memory_size": 64,
            "formfactor": {"id": 1, "name": "2FF"}, "manufacturer": {"id": 1, "name": "Gemalto"}},
    })
}

pub(super) fn shown_status(
    network: NetworkStatus,
    malformed: Option<Malformed>,
) -> (u64, &'static str) {
    if malformed == Some(Malformed::UnknownStatus) {
        (7, "Quarantined")
    } else {
        let (id, d) = status_of(network);
        (u64::from(id), d)
    }
}

/// The statistics of SIM `sim_id` (as shown) for `month` (`YYYY-MM`): `current_month` only when
/// the month has traffic, `last_hour` always.
pub(super) fn stats_body(sim_id: u64, month: &str, total: Decimal) -> String {
    let last_hour = r#""last_hour":{}"#;
    if total.is_zero() {
        format!("{{{last_hour}}}")
    } else {
        let stat_id = format!("{sim_id}{}5", month.replace('-', ""));
        let data = data_object(sim_id, month, total, &stat_id);
        format!(r#"{{"current_month":{{"data":{data}}},{last_hour}}}"#)
    }
}

/// One `data` statistics object; `volume` written as the exact decimal text.
fn data_object(sim_id: u64, month: &str, total: Decimal, stat_id: &str) -> String {
    let now = Utc::now().format(STAMP);
    format!(
        r#"{{"id":{stat_id},"sim_id":{sim_id},"month":"{month}-01","volume":{total},"volume_tx":0,"volume_rx":{total},"traffic_type_id":5,"traffic_type":{{"id":5,"description":"Data","unit":"MB"}},"last_updated":"{now}","cost":null,"currency_id":1,"currency":{{"id":1,"code":"EUR","symbol":"€"}}}}"#
    )
}

pub(super) fn quota_object(pkg: &CarrierPackage, unknown_status: bool) -> String {
    let limit = pkg.limit_mb.unwrap_or(Decimal::ZERO);
    let left = (limit - pkg.used_mb).max(Decimal::ZERO);
    let (sid, sdesc) = if unknown_status {
        (9, "SUSPENDED")
    } else {
        match pkg.status {
            PackageStatus::Expired => (3, "EXPIRED"),
            _ if left.is_zero() => (2, "EXHAUSTED"),
            _ => (1, "ACTIVE"),
        }
    };
    let stamp = |t: Option<DateTime<Utc>>| match t {
        Some(t) => format!("\"{}\"", t.format(STAMP)),
        None => "null".to_owned(),
    };
    format!(
        r#"{{"status":{{"id":{sid},"description":"{sdesc}"}},"volume":{left},"expiry_date":{},"peak_throughput":128000,"action_on_exhaustion":{{"id":1,"description":"Block"}},"auto_refill":0,"threshold_percentage":10,"threshold_volume":null,"last_volume_added":{limit},"last_status_change_date":{}}}"#,
        stamp(pkg.expires_at),
        stamp(pkg.activated_at),
    )
}
