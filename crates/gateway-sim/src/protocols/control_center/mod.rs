//! Cisco IoT Control Center REST API (Jasper; China Unicom's platform runs it too), written from
//! Cisco's public documentation (developer.cisco.com/docs/control-center), paths relative to the
//! API root (`https://<pod>/rws/api`):
//!
//! | call | request | answer |
//! | --- | --- | --- |
//! | Get Device Details | `GET /v1/devices/{iccid}` | `{iccid, imsi, msisdn, status, ratePlan, communicationPlan, dateUpdated, …}` |
//! | Get Device Usage | `GET /v1/devices/{iccid}/ctdUsages` | `{iccid, status, ratePlan, ctdDataUsage (bytes), ctdSMSUsage, …}` |
//! | Edit Device Details | `PUT /v1/devices/{iccid}` `{"status": "DEACTIVATED"}` | `{iccid}` |
//! | Search Devices | `GET /v1/devices?modifiedSince=…&pageSize=…&pageNumber=…` | `{pageNumber, devices: [{iccid, status, ratePlan, communicationPlan}], lastPage}` |
//!
//! Auth: HTTP Basic, `username:api_key` (the account's `username` and `api_key`). No header:
//! 401 `{"errorMessage": "Full authentication is required to access this resource"}` with
//! `WWW-Authenticate: Basic realm="Jasper"`; wrong credentials: 401 `errorCode` `10000001`.
//! Errors are `{"errorMessage", "errorCode"}` (the code a string): `20000001` unknown ICCID (404),
//! `10000023` malformed JSON, `10000028` invalid request (400), `30000001` server error (500).
//! Over the account's `rate_limit_per_sec` or `max_concurrent`: 429 with errorCode `40000029`
//! (the code is this simulator's choice: Cisco publishes the limits, not the refusal's code).
//!
//! Statuses: the fleet's online card is `ACTIVATED`, its stopped card `DEACTIVATED`. Usage: the
//! fleet's month-to-date MB times 1,048,576, exactly (a fleet figure finer than a byte gives a
//! fractional byte count, which the real platform never sends); the billing cycle is the
//! calendar month of the simulator's time zone. The sim's calls by stats kind: device details and
//! search are `realname` (the status queries; the platform has no real-name call), usage is
//! `usage`, the edit is `stop` or `start` by the status asked.

use super::{Malformed, Refusal, admit, done};
use crate::SimState;
use crate::fleet::SimCardView;
use crate::routes::Injected;
use crate::stats::Outcome;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, TimeZone, Utc};
use domain::{CarrierProtocol, NetworkStatus};
use gateway::CallKind;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use std::collections::HashMap;

const P: CarrierProtocol = CarrierProtocol::ControlCenter;

/// Bytes in the megabyte the fleet counts in.
const BYTES_PER_MB: i64 = 1_048_576;

/// The status a `Malformed::UnknownStatus` answer carries: not in the documented table.
const UNDOCUMENTED_STATUS: &str = "SUSPENDED";

/// The parameters Search Devices recognises (custom-field filters are not simulated).
const SEARCH_PARAMS: [&str; 6] = [
    "accountId",
    "modifiedSince",
    "modifiedTill",
    "status",
    "pageSize",
    "pageNumber",
];

pub(super) fn routes() -> Router<SimState> {
    Router::new()
        .route("/v1/devices", get(search))
        .route("/v1/devices/{iccid}", get(details).put(edit))
        .route("/v1/devices/{iccid}/ctdUsages", get(ctd_usages))
}

// ---------------------------------------------------------------------------------------------
// Answers in the platform's words.

/// `{"errorMessage", "errorCode"}` (`errorCode` absent when `None`).
fn cc_error(status: StatusCode, code: Option<&str>, message: &str) -> Response {
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

fn unknown_iccid() -> Response {
    cc_error(
        StatusCode::NOT_FOUND,
        Some("20000001"),
        "Resource not found - Invalid ICCID.",
    )
}

fn invalid_request(message: &str) -> Response {
    cc_error(StatusCode::BAD_REQUEST, Some("10000028"), message)
}

/// A proxy's or a login page instead of the API's JSON, HTTP 200.
fn html_page() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>Control Center</title></head>\
         <body><h1>Control Center</h1><p>Please sign in.</p></body></html>",
    )
        .into_response()
}

/// An answer the platform refused before looking at the request, in its words. `Malformed` is
/// rendered by each call (it depends on the answer's shape); here it falls back to HTML.
fn refusal(st: &SimState, r: Refusal) -> Response {
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
            Injected::Status(401) => cc_error(
                StatusCode::UNAUTHORIZED,
                Some("10000001"),
                "Invalid credentials",
            ),
            Injected::Status(404) => unknown_iccid(),
            Injected::Status(400) => invalid_request("Invalid request (scripted)"),
            Injected::Status(500) => cc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some("30000001"),
                "Unknown server error.",
            ),
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

/// HTTP Basic `username:api_key`; `Err` is the platform's 401.
fn authorize(st: &SimState, headers: &HeaderMap) -> Result<(), Box<Response>> {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        let mut resp = cc_error(
            StatusCode::UNAUTHORIZED,
            None,
            "Full authentication is required to access this resource",
        );
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"Jasper\""),
        );
        return Err(Box::new(resp));
    };
    let refused = || {
        Box::new(cc_error(
            StatusCode::UNAUTHORIZED,
            Some("10000001"),
            "Invalid credentials",
        ))
    };
    let (scheme, encoded) = value.trim().split_once(' ').ok_or_else(refused)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(refused());
    }
    let decoded = base64_decode(encoded.trim()).ok_or_else(refused)?;
    let text = String::from_utf8(decoded).map_err(|_| refused())?;
    let (user, key) = text.split_once(':').ok_or_else(refused)?;
    let accounts = &st.0.accounts;
    if accounts.credential_is(P, "username", user) && accounts.credential_is(P, "api_key", key) {
        Ok(())
    } else {
        Err(refused())
    }
}

/// Standard base64 with padding (RFC 4648 §4); `None` when not well formed.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let bytes = s.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let chunks = bytes.len() / 4;
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let pad = chunk.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != chunks) {
            return None;
        }
        let mut n = 0u32;
        for c in &chunk[..4 - pad] {
            n = (n << 6) | value(*c)?;
        }
        n <<= 6 * pad as u32;
        let b = n.to_be_bytes();
        out.extend_from_slice(&b[1..4 - pad]);
    }
    Some(out)
}

fn status_word(n: NetworkStatus) -> &'static str {
    match n {
        NetworkStatus::Online => "ACTIVATED",
        NetworkStatus::Stopped => "DEACTIVATED",
    }
}

/// Another card's ICCID: the last digit changed.
fn other_iccid(iccid: &str) -> String {
    let mut s = iccid.to_owned();
    match s.pop() {
        Some('0') => s.push('1'),
        Some(_) => s.push('0'),
        None => s.push('0'),
    }
    s
}

/// Control Center's date format: `2016-07-06 22:04:04.380+0000`.
fn cc_date(ms: u64) -> String {
    Utc.timestamp_millis_opt(ms as i64)
        .single()
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M:%S%.3f+0000")
        .to_string()
}

/// Digits of the ICCID, for a stable fake IMSI and MSISDN.
fn tail_digits(iccid: &str, n: usize) -> String {
    let digits: String = iccid.chars().filter(char::is_ascii_digit).collect();
    let start = digits.len().saturating_sub(n);
    format!("{:0>n$}", &digits[start..])
}

fn rate_plan(view: &SimCardView) -> String {
    view.packages
        .first()
        .map(|p| p.external_id.clone())
        .unwrap_or_else(|| "SIM Monthly 1GB".to_owned())
}

/// The Get Device Details answer of a card.
fn device_details(view: &SimCardView, iccid: &str, status: &str) -> Value {
    json!({
        "iccid": iccid,
        "imsi": format!("46001{}", tail_digits(iccid, 10)),
        "msisdn": format!("1064{}", tail_digits(iccid, 9)),
        "imei": "",
        "status": status,
        "ratePlan": rate_plan(view),
        "communicationPlan": "SIM Data CP",
        "customer": null,
        "endConsumerId": null,
        "dateActivated": cc_date(view.changed_at_ms),
        "dateUpdated": cc_date(view.changed_at_ms),
        "dateShipped": cc_date(view.changed_at_ms),
        "accountId": "100020620",
        "fixedIPAddress": null,
        "fixedIpv6Address": null,
        "accountCustom1": "",
        "simNotes": null,
        "deviceID": null,
        "modemID": "",
        "globalSimType": "",
    })
}

// ---------------------------------------------------------------------------------------------
// Get Device Details.

async fn details(
    State(st): State<SimState>,
    Path(iccid): Path<String>,
    headers: HeaderMap,
) -> Response {
    let (outcome, resp) = match admit(&st, P, CallKind::Realname).await {
        Err(Refusal::Fault(Injected::Malformed(m))) => {
            (Outcome::Error, malformed_details(&st, &iccid, m))
        }
        Err(r) => (r.outcome(), refusal(&st, r)),
        Ok(_place) => match authorize(&st, &headers) {
            Err(resp) => (Outcome::BadRequest, *resp),
            Ok(()) => match st.0.fleet.view(&iccid) {
                None => (Outcome::NotFound, unknown_iccid()),
                Some(view) => (
                    Outcome::Ok,
                    Json(device_details(
                        &view,
                        &iccid,
                        status_word(view.network_status),
                    ))
                    .into_response(),
                ),
            },
        },
    };
    done(&st, outcome);
    resp
}

fn malformed_details(st: &SimState, iccid: &str, m: Malformed) -> Response {
    let Some(view) = st.0.fleet.view(iccid) else {
        return match m {
            Malformed::Html => html_page(),
            _ => unknown_iccid(),
        };
    };
    match m {
        Malformed::Html => html_page(),
        // A single-card answer without its card.
        Malformed::DropLast => Json(json!({})).into_response(),
        Malformed::WrongIccid => Json(device_details(
            &view,
            &other_iccid(iccid),
            status_word(view.network_status),
        ))
        .into_response(),
        Malformed::UnknownStatus => {
            Json(device_details(&view, iccid, UNDOCUMENTED_STATUS)).into_response()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Get Device Usage (cycle to date).

async fn ctd_usages(
    State(st): State<SimState>,
    Path(iccid): Path<String>,
    headers: HeaderMap,
) -> Response {
    let (outcome, resp) = match admit(&st, P, CallKind::Usage).await {
        Err(Refusal::Fault(Injected::Malformed(m))) => {
            (Outcome::Error, malformed_usage(&st, &iccid, m))
        }
        Err(r) => (r.outcome(), refusal(&st, r)),
        Ok(_place) => match authorize(&st, &headers) {
            Err(resp) => (Outcome::BadRequest, *resp),
            Ok(()) => match st.0.fleet.view(&iccid) {
                None => (Outcome::NotFound, unknown_iccid()),
                Some(view) => {
                    // One usage answer, one growth step.
                    match st.0.fleet.usage(&iccid, st.current_month()) {
                        None => (Outcome::NotFound, unknown_iccid()),
                        Some((_, total_mb)) => {
                            let status = status_word(view.network_status);
                            match usage_body(&view, &iccid, status, total_mb) {
                                Some(r) => (Outcome::Ok, r),
                                None => (Outcome::Error, server_error()),
                            }
                        }
                    }
                }
            },
        },
    };
    done(&st, outcome);
    resp
}

fn server_error() -> Response {
    cc_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        Some("30000001"),
        "Unknown server error.",
    )
}

/// The ctdUsages answer, `ctdDataUsage` written as the exact decimal byte count. `None`: the
/// figure overflows.
fn usage_body(
    view: &SimCardView,
    iccid: &str,
    status: &str,
    total_mb: Decimal,
) -> Option<Response> {
    let bytes = total_mb
        .checked_mul(Decimal::from(BYTES_PER_MB))?
        .normalize();
    let head = json!({
        "iccid": iccid,
        "imsi": format!("46001{}", tail_digits(iccid, 10)),
        "msisdn": format!("1064{}", tail_digits(iccid, 9)),
        "imei": "",
        "status": status,
        "ratePlan": rate_plan(view),
        "communicationPlan": "SIM Data CP",
        "ctdSMSUsage": 0,
        "ctdVoiceUsage": 0,
        "ctdSessionCount": view.usage_queries,
        "overageLimitReached": false,
        "overageLimitOverride": "DEFAULT",
    })
    .to_string();
    // serde_json would read a decimal through an f64: splice the exact text in instead.
    let body = format!(
        "{},\"ctdDataUsage\":{bytes}}}",
        head.strip_suffix('}').unwrap_or(&head)
    );
    Some(
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
    )
}

fn malformed_usage(st: &SimState, iccid: &str, m: Malformed) -> Response {
    let Some(view) = st.0.fleet.view(iccid) else {
        return match m {
            Malformed::Html => html_page(),
            _ => unknown_iccid(),
        };
    };
    // Not a usage answer: the card's total does not grow.
    let status = status_word(view.network_status);
    let total = view.month_total_mb;
    let resp = match m {
        Malformed::Html => Some(html_page()),
        Malformed::DropLast => Some(Json(json!({})).into_response()),
        Malformed::WrongIccid => usage_body(&view, &other_iccid(iccid), status, total),
        Malformed::UnknownStatus => usage_body(&view, iccid, UNDOCUMENTED_STATUS, total),
    };
    resp.unwrap_or_else(server_error)
}

// ---------------------------------------------------------------------------------------------
// Edit Device Details: the status only (stop = DEACTIVATED, start = ACTIVATED).

async fn edit(
    State(st): State<SimState>,
    Path(iccid): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let wanted: Result<Option<String>, &'static str> = serde_json::from_slice::<Value>(&body)
        .map_err(|_| "bad json")
        .map(|v| v.get("status").and_then(Value::as_str).map(str::to_owned));
    let kind = match wanted.as_ref().ok().and_then(|s| s.as_deref()) {
        Some("ACTIVATED") => Some(CallKind::Start),
        Some("DEACTIVATED") => Some(CallKind::Stop),
        _ => None,
    };
    if let Some(k) = kind {
        st.0.fleet.count_command(&iccid, k);
    }
    let (outcome, resp) = match admit(&st, P, kind.unwrap_or(CallKind::Stop)).await {
        Err(Refusal::Fault(Injected::Malformed(m))) => (Outcome::Error, malformed_edit(&iccid, m)),
        Err(r) => (r.outcome(), refusal(&st, r)),
        Ok(_place) => match authorize(&st, &headers) {
            Err(resp) => (Outcome::BadRequest, *resp),
            Ok(()) => match (wanted, kind) {
                (Err(_), _) => (
                    Outcome::BadRequest,
                    cc_error(
                        StatusCode::BAD_REQUEST,
                        Some("10000023"),
                        "The JSON in the request is not well formed.",
                    ),
                ),
                (Ok(None), _) => (
                    Outcome::BadRequest,
                    invalid_request("At least one device attribute is required"),
                ),
                (Ok(Some(s)), None) => (
                    Outcome::BadRequest,
                    invalid_request(&format!(
                        "Invalid status {s}: this simulator changes ACTIVATED and DEACTIVATED only"
                    )),
                ),
                (Ok(Some(_)), Some(k)) => match st.0.fleet.set_network(&iccid, k) {
                    None => (Outcome::NotFound, unknown_iccid()),
                    Some(_) => (Outcome::Ok, Json(json!({ "iccid": iccid })).into_response()),
                },
            },
        },
    };
    done(&st, outcome);
    resp
}

/// A malformed answer to an edit: the change is not applied.
fn malformed_edit(iccid: &str, m: Malformed) -> Response {
    match m {
        Malformed::Html => html_page(),
        Malformed::DropLast => Json(json!({})).into_response(),
        Malformed::WrongIccid => Json(json!({ "iccid": other_iccid(iccid) })).into_response(),
        Malformed::UnknownStatus => {
            Json(json!({ "iccid": iccid, "status": UNDOCUMENTED_STATUS })).into_response()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Search Devices.

/// `yyyy-MM-ddTHH:mm:ss+hh:mm` (also `Z` or `+hhmm`).
fn parse_instant(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .or_else(|_| DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%z"))
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

fn status_filter(word: &str) -> Result<Option<NetworkStatus>, ()> {
    match word {
        "ACTIVATED" => Ok(Some(NetworkStatus::Online)),
        "DEACTIVATED" => Ok(Some(NetworkStatus::Stopped)),
        // Documented values no simulated card is in.
        "ACTIVATION_READY" | "INVENTORY" | "TEST_READY" | "RETIRED" | "PURGED" | "REPLACED" => {
            Ok(None)
        }
        _ => Err(()),
    }
}

async fn search(
    State(st): State<SimState>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let (outcome, resp) = match admit(&st, P, CallKind::Realname).await {
        Err(Refusal::Fault(Injected::Malformed(m))) => match search_page(&st, &params) {
            Ok(page) => (Outcome::Error, malformed_search(page, m)),
            Err(resp) => (Outcome::BadRequest, *resp),
        },
        Err(r) => (r.outcome(), refusal(&st, r)),
        Ok(_place) => match authorize(&st, &headers) {
            Err(resp) => (Outcome::BadRequest, *resp),
            Ok(()) => match search_page(&st, &params) {
                Ok(page) => (Outcome::Ok, Json(page).into_response()),
                Err(resp) => (Outcome::BadRequest, *resp),
            },
        },
    };
    done(&st, outcome);
    resp
}

/// The platform's 400 `10000028`, boxed.
fn bad(message: &str) -> Box<Response> {
    Box::new(invalid_request(message))
}

/// One page of the search, or the platform's 400.
fn search_page(st: &SimState, params: &HashMap<String, String>) -> Result<Value, Box<Response>> {
    if let Some(unknown) = params.keys().find(|k| !SEARCH_PARAMS.contains(&k.as_str())) {
        return Err(bad(&format!(
            "Invalid request: unrecognized parameter {unknown}"
        )));
    }
    let since = params
        .get("modifiedSince")
        .ok_or_else(|| bad("modifiedSince is required"))?;
    let since = parse_instant(since)
        .ok_or_else(|| bad("Invalid modifiedSince: use yyyy-MM-ddTHH:mm:ss+hh:mm"))?;
    let till = match params.get("modifiedTill") {
        None => None,
        Some(t) => Some(
            parse_instant(t)
                .ok_or_else(|| bad("Invalid modifiedTill: use yyyy-MM-ddTHH:mm:ss+hh:mm"))?,
        ),
    };
    let filter = match params.get("status") {
        None => None,
        Some(w) => Some(status_filter(w).map_err(|()| bad("Invalid status"))?),
    };
    let max = st.0.accounts.get(P).page_size_max;
    let page_size = match params.get("pageSize") {
        None => max.min(50),
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => return Err(bad(&format!("Invalid pageSize: 1 to {max}"))),
        },
    };
    let page_number = match params.get("pageNumber") {
        None => 1,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => return Err(bad("Invalid pageNumber: 1 or more")),
        },
    };
    let since_ms = since.timestamp_millis().max(0) as u64;
    let offset = (page_number - 1).saturating_mul(page_size);
    let (cards, total) = if till.is_none() && filter.is_none() {
        st.0.fleet.list(offset, page_size, Some(since_ms))
    } else {
        let till_ms = till.map(|t| t.timestamp_millis().max(0) as u64);
        let (all, _) = st.0.fleet.list(0, usize::MAX, Some(since_ms));
        let matching: Vec<SimCardView> = all
            .into_iter()
            .filter(|c| till_ms.is_none_or(|t| c.changed_at_ms <= t))
            .filter(|c| match filter {
                None => true,
                Some(None) => false,
                Some(Some(n)) => c.network_status == n,
            })
            .collect();
        let total = matching.len();
        (
            matching.into_iter().skip(offset).take(page_size).collect(),
            total,
        )
    };
    let last_page = offset.saturating_add(cards.len()) >= total;
    let devices: Vec<Value> = cards
        .iter()
        .map(|c| {
            json!({
                "iccid": c.iccid,
                "status": status_word(c.network_status),
                "ratePlan": rate_plan(c),
                "communicationPlan": "SIM Data CP",
            })
        })
        .collect();
    Ok(json!({
        "pageNumber": page_number,
        "devices": devices,
        "lastPage": last_page,
    }))
}

fn malformed_search(mut page: Value, m: Malformed) -> Response {
    let devices = page.get_mut("devices").and_then(Value::as_array_mut);
    match (m, devices) {
        (Malformed::Html, _) => return html_page(),
        (Malformed::DropLast, Some(d)) => {
            d.pop();
        }
        (Malformed::WrongIccid, Some(d)) => {
            if let Some(first) = d.first_mut() {
                let other = first
                    .get("iccid")
                    .and_then(Value::as_str)
                    .map(other_iccid)
                    .unwrap_or_default();
                first["iccid"] = Value::String(other);
            }
        }
        (Malformed::UnknownStatus, Some(d)) => {
            if let Some(first) = d.first_mut() {
                first["status"] = Value::String(UNDOCUMENTED_STATUS.to_owned());
            }
        }
        (_, None) => {}
    }
    Json(page).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_basic_credentials() {
        assert_eq!(
            base64_decode("c2ltLWNjLXVzZXI6c2ltLWNjLWFwaS1rZXk=").as_deref(),
            Some(&b"sim-cc-user:sim-cc-api-key"[..])
        );
        assert_eq!(base64_decode("YQ==").as_deref(), Some(&b"a"[..]));
        assert_eq!(base64_decode("YWI=").as_deref(), Some(&b"ab"[..]));
        assert_eq!(base64_decode("YWJj").as_deref(), Some(&b"abc"[..]));
        assert_eq!(base64_decode("YQ=="), base64_decode("YQ=="));
        assert!(base64_decode("YQ=").is_none());
        assert!(base64_decode("Y===").is_none());
        assert!(base64_decode("YQ==YWJj").is_none());
        assert!(base64_decode("!!!!").is_none());
    }

    #[test]
    fn another_iccid_differs() {
        assert_eq!(other_iccid("8986001"), "8986000");
        assert_eq!(other_iccid("8986000"), "8986001");
    }

    #[test]
    fn instants_parse_in_the_documented_forms() {
        let want = Utc.with_ymd_and_hms(2016, 4, 18, 17, 31, 34).single();
        assert_eq!(parse_instant("2016-04-18T17:31:34+00:00"), want);
        assert_eq!(parse_instant("2016-04-18T17:31:34Z"), want);
        assert_eq!(parse_instant("2016-04-18T19:31:34+0200"), want);
        // A `+` the client forgot to encode arrives as a space.
        assert_eq!(parse_instant("2016-04-18T17:31:34 00:00"), None);
    }
}
