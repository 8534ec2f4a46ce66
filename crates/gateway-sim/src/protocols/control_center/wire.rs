//! Control Center's refusals in its words: the error body, the codes, the throttling answer,
//! the HTML page a proxy answers instead, and the refusals of admission and injected faults.

use super::P;
use crate::SimState;
use crate::protocols::Refusal;
use crate::routes::Injected;
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// `{"errorMessage", "errorCode"}` (`errorCode` absent when `None`).
pub(super) fn cc_error(status: StatusCode, code: Option<&str>, message: &str) -> Response {
    let body = match code {
        Some(c) => json!({ "errorMessage": message, "errorCode": c }),
        None => json!({ "errorMessage": message }),
    };
    (status, Json(body)).into_response()
}

fn throttled(retry_after_secs: u64, message: &str) -> Response {
    let mut resp = cc_error(StatusCode::TOO_MANY_REQUESTS, Some("40000029"), message);
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    resp
}

pub(super) fn unknown_iccid() -> Response {
    cc_error(
        StatusCode::NOT_FOUND,
        Some("20000001"),
        "Resource not found - Invalid ICCID.",
    )
}

pub(super) fn invalid_request(message: &str) -> Response {
    cc_error(StatusCode::BAD_REQUEST, Some("10000028"), message)
}

/// A proxy's or a login page instead of the API's JSON, HTTP 200.
pub(super) fn html_page() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>Control Center</title></head>\
         <body><h1>Control Center</h1><p>Please sign in.</p></body></html>",
    )
        .into_response()
}

/// The platform's 401 `10000001`: credentials sent, not the account's.
pub(super) fn invalid_credentials() -> Response {
    cc_error(
        StatusCode::UNAUTHORIZED,
        Some("10000001"),
        "Invalid credentials",
    )
}

pub(super) fn server_error() -> Response {
    cc_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        Some("30000001"),
        "Unknown server error.",
    )
}

/// An answer the platform refused before looking at the request, in its words. `Malformed` is
/// rendered by each call (it depends on the answer's shape); here it falls back to HTML.
pub(super) fn refusal(st: &SimState, r: Refusal) -> Response {
    match r {
        Refusal::OverRate => {
            let limit = st.0.accounts.get(P).rate_limit_per_sec;
            throttled(
                1,
                &format!("Rate Limit Exceeded: more than {limit} calls per second"),
            )
        }
        Refusal::OverConcurrency => throttled(
            1,
            "Rate Limit Exceeded: only one active call at a time is allowed",
        ),
        Refusal::Fault(f) => match f {
            Injected::TimedOut => cc_error(StatusCode::GATEWAY_TIMEOUT, None, "Gateway Timeout"),
            Injected::Status(429) => throttled(
                crate::routes::retry_after_secs(st),
                "Rate Limit Exceeded (scripted)",
            ),
            Injected::Status(401) => invalid_credentials(),
            Injected::Status(404) => unknown_iccid(),
            Injected::Status(400) => invalid_request("Invalid request (scripted)"),
            Injected::Status(500) => server_error(),
            Injected::Status(code) => {
                let status = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
                cc_error(status, None, &format!("scripted failure {code}"))
            }
            Injected::OverQuota => throttled(1, "Rate Limit Exceeded (quota)"),
            Injected::Throttled { retry_after_secs } => {
                throttled(retry_after_secs, "Rate Limit Exceeded")
            }
            Injected::Unavailable => {
                cc_error(StatusCode::SERVICE_UNAVAILABLE, None, "Service Unavailable")
            }
            Injected::Malformed(_) => html_page(),
        },
    }
}
