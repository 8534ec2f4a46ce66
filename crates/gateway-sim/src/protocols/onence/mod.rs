//! The 1NCE Management API (`https://api.1nce.com/management-api`), as its public OpenAPI
//! documents describe it ("Authorization" v2.1.1, "SIM Management" v1 paths, "SIM Usage"), over
//! the in-memory fleet. `docs/carriers/1nce.md` lists what is documented and what is assumed.
//!
//! | request | answer |
//! | --- | --- |
//! | `POST /oauth/token` (Basic `client_id:client_secret`, `{"grant_type":"client_credentials"}`) | `{status_code, access_token, token_type: "bearer", expires_in, userId, scope}`; 400 `{statusCode, errorCode, message}` |
//! | `GET /v1/sims?page&pageSize` (`pageSize` 1..=100) | an array of SIMs; `X-Count-Per-Page`, `X-Current-Page`, `X-Total-Count`, `X-Total-Pages` |
//! | `GET /v1/sims/{iccid}` | one SIM: `status` `Enabled` / `Disabled` |
//! | `PUT /v1/sims/{iccid}` `{"iccid", "status": "Enabled" \| "Disabled"}` | 200, empty body |
//! | `GET /v1/sims/{iccid}/status` | connectivity: `status` `ONLINE` / `ATTACHED` / `OFFLINE` |
//! | `GET /v1/sims/{iccid}/usage?start_dt&end_dt` (`YYYY-MM-DD`) | `{stats: [{date, data: {volume (MB, a string), ...}, sms: {...}}]}` |
//! | `GET /v1/sims/{iccid}/quota/data` | `{volume (MB left), total_volume, expiry_date, ...}` |
//!
//! Every other call needs `Authorization: Bearer <access_token>`: an unknown or expired token is
//! 401. The platform's own limit (`rate_limit_per_sec`, `max_concurrent`) is 429
//! `{"message":"Too Many Requests"}`. Errors of the SIM endpoints carry
//! `{error_code, error_token, message}`.
//!
//! Usage: the fleet keeps one month total per card; the simulator answers it as daily records
//! of the sim's time zone (the first day of the month and today, together exactly the total),
//! only those within `start_dt..=end_dt`. The data quota is the card's first active package (or
//! its first): `total_volume` = `limit_mb`, `volume` = `limit_mb - used_mb`; a card without a
//! package has no quota (404).
//!
//! Injected malformed answers: `html` an HTTP 200 HTML page (nothing applied); `drop_last` the
//! SIM list without its last SIM, a single-SIM answer `{}`; `wrong_iccid` a SIM answer naming
//! another ICCID (usage and quota answers name no card: answered normally); `unknown_status` a
//! SIM `status` outside `Enabled` / `Disabled` (answered normally where there is no status).

use super::{Malformed, Refusal, SimCardView, TokenCheck, admit, done};
use crate::SimState;
use crate::accounts::InFlight;
use crate::routes::{Injected, retry_after_secs};
use crate::stats::Outcome;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{Datelike, NaiveDate};
use domain::{CarrierPackage, CarrierProtocol, NetworkStatus, PackageStatus};
use gateway::CallKind;
use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::{Value, json};
use std::collections::HashMap;

const P: CarrierProtocol = CarrierProtocol::OneNce;

pub(super) fn routes() -> Router<SimState> {
    Router::new()
        .route("/oauth/token", post(token))
        .route("/v1/sims", get(list))
        .route("/v1/sims/{iccid}", get(sim).put(change))
        .route("/v1/sims/{iccid}/status", get(connectivity))
        .route("/v1/sims/{iccid}/usage", get(usage))
        .route("/v1/sims/{iccid}/quota/data", get(quota))
}

// ---------------------------------------------------------------------------------------------
// Answers in the platform's words.

fn json_answer(status: StatusCode, body: &Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// A JSON body written as text (numbers must keep their exact decimal digits).
fn raw_json(status: StatusCode, text: String) -> Response {
    let mut resp = (status, text).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json;charset=UTF-8"),
    );
    resp
}

/// The error shape of the SIM endpoints (`NotFound`, `BadRequest`, `InternalServerError`, ...).
fn sim_error(status: StatusCode, message: impl Into<String>) -> Response {
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
fn token_error(error_code: &str, message: &str) -> Response {
    json_answer(
        StatusCode::BAD_REQUEST,
        &json!({"statusCode": 400, "errorCode": error_code, "message": message}),
    )
}

fn unauthorized() -> Response {
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

fn html_page() -> Response {
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
fn refused(st: &SimState, r: Refusal) -> Response {
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

/// What a request may go on with after [`gate`].
struct Pass {
    _place: Option<InFlight>,
    malformed: Option<Malformed>,
}

/// `admit` (limits and faults), then the Bearer token when `bearer`. `Err`: the answer, its
/// outcome already recorded.
async fn gate(
    st: &SimState,
    headers: &HeaderMap,
    kind: CallKind,
    bearer: bool,
) -> Result<Pass, Response> {
    let (place, malformed) = match admit(st, P, kind).await {
        Ok(place) => (place, None),
        Err(Refusal::Fault(Injected::Malformed(m))) => (None, Some(m)),
        Err(r) => {
            done(st, r.outcome());
            return Err(refused(st, r));
        }
    };
    if bearer {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .unwrap_or("");
        if token.is_empty() || st.0.accounts.check_token(P, token) != TokenCheck::Valid {
            done(st, Outcome::BadRequest);
            return Err(unauthorized());
        }
    }
    Ok(Pass {
        _place: place,
        malformed,
    })
}

/// Ends a request with `outcome`.
fn finish(st: &SimState, outcome: Outcome, resp: Response) -> Response {
    done(st, outcome);
    resp
}

fn malformed_outcome(m: Malformed) -> Outcome {
    Injected::Malformed(m).outcome()
}

// ---------------------------------------------------------------------------------------------
// POST /oauth/token

async fn token(State(st): State<SimState>, headers: HeaderMap, body: Bytes) -> Response {
    let pass = match gate(&st, &headers, CallKind::Realname, false).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    if pass.malformed == Some(Malformed::Html) {
        return finish(&st, malformed_outcome(Malformed::Html), html_page());
    }
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let grant_type = if ct.starts_with("application/json") {
        serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
            v.get("grant_type")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
    } else if ct.starts_with("application/x-www-form-urlencoded") {
        String::from_utf8_lossy(&body)
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "grant_type")
            .map(|(_, v)| v.to_owned())
    } else {
        return finish(
            &st,
            Outcome::BadRequest,
            token_error("UnsupportedContentTypeError", "Content-Type not supported"),
        );
    };
    let Some(grant_type) = grant_type else {
        return finish(
            &st,
            Outcome::BadRequest,
            token_error(
                "BodyValidationError",
                "Request body validation error: Missing attributes 'grant_type'",
            ),
        );
    };
    if grant_type != "client_credentials" {
        return finish(
            &st,
            Outcome::BadRequest,
            token_error(
                "BodyValidationError",
                "Request body validation error: grant_type must be 'client_credentials'",
            ),
        );
    }
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64_decode(b.trim()))
        .and_then(|raw| String::from_utf8(raw).ok());
    let Some(basic) = basic else {
        return finish(
            &st,
            Outcome::BadRequest,
            token_error(
                "AuthValidationError",
                "Auth header validation error: Missing attributes 'username'",
            ),
        );
    };
    let Some((user, password)) = basic.split_once(':') else {
        return finish(
            &st,
            Outcome::BadRequest,
            token_error(
                "AuthValidationError",
                "Auth header validation error: Missing attributes 'password'",
            ),
        );
    };
    if !st.0.accounts.credential_is(P, "client_id", user) {
        return finish(
            &st,
            Outcome::BadRequest,
            token_error("BadCredentials", "User does not exist."),
        );
    }
    if !st.0.accounts.credential_is(P, "client_secret", password) {
        return finish(
            &st,
            Outcome::BadRequest,
            token_error("BadCredentials", "Bad credentials."),
        );
    }
    let (access_token, ttl) = st.0.accounts.issue_token(P);
    finish(
        &st,
        Outcome::Ok,
        json_answer(
            StatusCode::OK,
            &json!({
                "status_code": 200,
                "access_token": access_token,
                "token_type": "bearer",
                "expires_in": ttl.as_secs(),
                "userId": user,
                "scope": "all",
            }),
        ),
    )
}

/// Standard base64 (RFC 4648, padding optional); `None` on any other character.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    }
    let bytes = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in bytes {
        acc = (acc << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// The SIM resource.

/// The Luhn check digit of a digit string (`iccid_with_luhn`).
fn luhn_digit(digits: &str) -> Option<u32> {
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
fn data_quota(packages: &[CarrierPackage]) -> Option<&CarrierPackage> {
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
fn sim_json(v: &SimCardView, malformed: Option<Malformed>) -> Value {
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
fn other_iccid(iccid: &str) -> String {
    let mut s = iccid.to_owned();
    match s.pop() {
        Some('9') => s.push('0'),
        Some(c) if c.is_ascii_digit() => s.push(char::from(c as u8 + 1)),
        _ => s.push('X'),
    }
    s
}

/// `GET /v1/sims?page=1&pageSize=100`.
async fn list(
    State(st): State<SimState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let pass = match gate(&st, &headers, CallKind::Realname, true).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let max = st.0.accounts.get(P).page_size_max;
    let page = match q.get("page").map(|s| s.parse::<usize>()) {
        None => 1,
        Some(Ok(n)) if n >= 1 => n,
        Some(_) => {
            return finish(
                &st,
                Outcome::BadRequest,
                sim_error(
                    StatusCode::BAD_REQUEST,
                    "page must be an integer of at least 1",
                ),
            );
        }
    };
    let size = match q.get("pageSize").map(|s| s.parse::<usize>()) {
        None => 10.min(max),
        Some(Ok(n)) if (1..=max).contains(&n) => n,
        Some(_) => {
            return finish(
                &st,
                Outcome::BadRequest,
                sim_error(
                    StatusCode::BAD_REQUEST,
                    format!("pageSize must be an integer from 1 to {max}"),
                ),
            );
        }
    };
    if pass.malformed == Some(Malformed::Html) {
        return finish(&st, malformed_outcome(Malformed::Html), html_page());
    }
    let (views, total) = st.0.fleet.list((page - 1) * size, size, None);
    let last = views.len().saturating_sub(1);
    let mut items: Vec<Value> = views
        .iter()
        .enumerate()
        .map(|(i, v)| {
            // The fault touches the page's last SIM only.
            let m = pass.malformed.filter(|_| i == last);
            sim_json(v, m)
        })
        .collect();
    if pass.malformed == Some(Malformed::DropLast) {
        items.pop();
    }
    let mut resp = json_answer(StatusCode::OK, &Value::Array(items));
    let h = resp.headers_mut();
    h.insert("X-Count-Per-Page", HeaderValue::from(size as u64));
    h.insert("X-Current-Page", HeaderValue::from(page as u64));
    h.insert("X-Total-Count", HeaderValue::from(total as u64));
    h.insert(
        "X-Total-Pages",
        HeaderValue::from(total.div_ceil(size) as u64),
    );
    let outcome = pass.malformed.map_or(Outcome::Ok, malformed_outcome);
    finish(&st, outcome, resp)
}

fn unknown_sim(st: &SimState, iccid: &str) -> Response {
    finish(
        st,
        Outcome::NotFound,
        sim_error(StatusCode::NOT_FOUND, format!("SIM {iccid} not found")),
    )
}

/// `GET /v1/sims/{iccid}`.
async fn sim(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
) -> Response {
    let pass = match gate(&st, &headers, CallKind::Realname, true).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let Some(view) = st.0.fleet.view(&iccid) else {
        return unknown_sim(&st, &iccid);
    };
    match pass.malformed {
        Some(Malformed::Html) => finish(&st, malformed_outcome(Malformed::Html), html_page()),
        Some(Malformed::DropLast) => finish(
            &st,
            malformed_outcome(Malformed::DropLast),
            json_answer(StatusCode::OK, &json!({})),
        ),
        m => finish(
            &st,
            m.map_or(Outcome::Ok, malformed_outcome),
            json_answer(StatusCode::OK, &sim_json(&view, m)),
        ),
    }
}

/// `GET /v1/sims/{iccid}/status`: the connectivity, not the SIM's Enabled/Disabled state.
async fn connectivity(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
) -> Response {
    let pass = match gate(&st, &headers, CallKind::Realname, true).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let Some(network) = st.0.fleet.network(&iccid) else {
        return unknown_sim(&st, &iccid);
    };
    let status = match (pass.malformed, network) {
        (Some(Malformed::UnknownStatus), _) => "DETACHED",
        (_, NetworkStatus::Online) => "ATTACHED",
        (_, NetworkStatus::Stopped) => "OFFLINE",
    };
    match pass.malformed {
        Some(Malformed::Html) => finish(&st, malformed_outcome(Malformed::Html), html_page()),
        Some(Malformed::DropLast) => finish(
            &st,
            malformed_outcome(Malformed::DropLast),
            json_answer(StatusCode::OK, &json!({})),
        ),
        m => finish(
            &st,
            m.map_or(Outcome::Ok, malformed_outcome),
            json_answer(
                StatusCode::OK,
                &json!({"status": status, "location": null, "pdp_context": null, "services": []}),
            ),
        ),
    }
}

/// `PUT /v1/sims/{iccid}` with `{"iccid", "status"}`: the stop (`Disabled`) and start
/// (`Enabled`).
async fn change(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
    body: Bytes,
) -> Response {
    let parsed = serde_json::from_slice::<Value>(&body).ok();
    let wanted = parsed
        .as_ref()
        .and_then(|v| v.get("status"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let kind = match wanted.as_deref() {
        Some("Disabled") => Some(CallKind::Stop),
        Some("Enabled") => Some(CallKind::Start),
        _ => None,
    };
    if let Some(k) = kind {
        st.0.fleet.count_command(&iccid, k);
    }
    let pass = match gate(&st, &headers, kind.unwrap_or(CallKind::Stop), true).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let Some(body) = parsed else {
        return finish(
            &st,
            Outcome::BadRequest,
            sim_error(StatusCode::BAD_REQUEST, "Request body is not valid JSON"),
        );
    };
    if let Some(named) = body.get("iccid").and_then(Value::as_str)
        && named != iccid
    {
        return finish(
            &st,
            Outcome::BadRequest,
            sim_error(
                StatusCode::BAD_REQUEST,
                "The ICCID of the body differs from the ICCID of the path",
            ),
        );
    }
    if st.0.fleet.view(&iccid).is_none() {
        return unknown_sim(&st, &iccid);
    }
    if pass.malformed == Some(Malformed::Html) {
        return finish(&st, malformed_outcome(Malformed::Html), html_page());
    }
    let Some(kind) = kind else {
        if wanted.is_some() {
            return finish(
                &st,
                Outcome::BadRequest,
                sim_error(
                    StatusCode::BAD_REQUEST,
                    "status must be one of: Enabled, Disabled",
                ),
            );
        }
        // A change of label or IMEI lock alone: nothing the fleet keeps.
        return finish(&st, Outcome::Ok, StatusCode::OK.into_response());
    };
    match st.0.fleet.set_network(&iccid, kind) {
        Some(_) => finish(&st, Outcome::Ok, StatusCode::OK.into_response()),
        None => unknown_sim(&st, &iccid),
    }
}

// ---------------------------------------------------------------------------------------------
// Usage and quota.

fn parse_day(s: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
}

fn day_record(day: NaiveDate, mb: Decimal) -> Value {
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

/// `GET /v1/sims/{iccid}/usage?start_dt=YYYY-MM-DD&end_dt=YYYY-MM-DD`.
async fn usage(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let pass = match gate(&st, &headers, CallKind::Usage, true).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let today = st.0.clock.now().with_timezone(&st.0.timezone).date_naive();
    let bound = |name: &str, default: NaiveDate| match q.get(name) {
        None => Ok(default),
        Some(s) => parse_day(s).ok_or_else(|| format!("{name} must be YYYY-MM-DD, got `{s}`")),
    };
    let range = bound("start_dt", today - chrono::Days::new(30))
        .and_then(|start| bound("end_dt", today).map(|end| (start, end)));
    let (start, end) = match range {
        Ok((s, e)) if s <= e => (s, e),
        Ok(_) => {
            return finish(
                &st,
                Outcome::BadRequest,
                sim_error(StatusCode::BAD_REQUEST, "start_dt must not be after end_dt"),
            );
        }
        Err(e) => {
            return finish(
                &st,
                Outcome::BadRequest,
                sim_error(StatusCode::BAD_REQUEST, e),
            );
        }
    };
    if st.0.fleet.view(&iccid).is_none() {
        return unknown_sim(&st, &iccid);
    }
    match pass.malformed {
        Some(Malformed::Html) => {
            return finish(&st, malformed_outcome(Malformed::Html), html_page());
        }
        Some(Malformed::DropLast) => {
            return finish(
                &st,
                malformed_outcome(Malformed::DropLast),
                json_answer(StatusCode::OK, &json!({})),
            );
        }
        _ => {}
    }
    let Some((month, total)) = st.0.fleet.usage(&iccid, st.current_month()) else {
        return unknown_sim(&st, &iccid);
    };
    let first = NaiveDate::from_ymd_opt(month.div_euclid(12), (month.rem_euclid(12) + 1) as u32, 1)
        .unwrap_or(today);
    // The month's total as daily records: its first day and today (when today is later in the
    // same month), together exactly the total.
    let mut days = Vec::new();
    if today.year() == first.year() && today.month() == first.month() && today.day() > 1 {
        let early = (total / Decimal::TWO).round_dp_with_strategy(2, RoundingStrategy::ToZero);
        days.push((first, early));
        days.push((today, total - early));
    } else {
        days.push((first, total));
    }
    let stats: Vec<Value> = days
        .into_iter()
        .filter(|(d, _)| (start..=end).contains(d))
        .map(|(d, mb)| day_record(d, mb))
        .collect();
    let outcome = pass.malformed.map_or(Outcome::Ok, malformed_outcome);
    finish(
        &st,
        outcome,
        json_answer(StatusCode::OK, &json!({ "stats": stats })),
    )
}

/// `GET /v1/sims/{iccid}/quota/data`.
async fn quota(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
) -> Response {
    let pass = match gate(&st, &headers, CallKind::Packages, true).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let Some(packages) = st.0.fleet.packages(&iccid) else {
        return unknown_sim(&st, &iccid);
    };
    match pass.malformed {
        Some(Malformed::Html) => {
            return finish(&st, malformed_outcome(Malformed::Html), html_page());
        }
        Some(Malformed::DropLast) => {
            return finish(
                &st,
                malformed_outcome(Malformed::DropLast),
                json_answer(StatusCode::OK, &json!({})),
            );
        }
        _ => {}
    }
    let Some(p) = data_quota(&packages) else {
        return finish(
            &st,
            Outcome::NotFound,
            sim_error(
                StatusCode::NOT_FOUND,
                format!("No data quota found for SIM {iccid}"),
            ),
        );
    };
    let (total, left) = volumes(p);
    let text = |v: &Option<chrono::DateTime<chrono::Utc>>| {
        v.map(|t| {
            serde_json::to_string(&t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
                .unwrap_or_else(|_| "null".to_owned())
        })
    };
    // Written as text: the volumes keep their exact decimal digits as JSON numbers.
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
    let outcome = pass.malformed.map_or(Outcome::Ok, malformed_outcome);
    finish(&st, outcome, raw_json(StatusCode::OK, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_luhn() {
        assert_eq!(
            base64_decode("c2ltLTFuY2UtY2xpZW50OnNpbS0xbmNlLXNlY3JldA==").as_deref(),
            Some(&b"sim-1nce-client:sim-1nce-secret"[..])
        );
        assert_eq!(base64_decode("a*b"), None);
        // 7992739871 has the Luhn check digit 3.
        assert_eq!(luhn_digit("7992739871"), Some(3));
        assert_eq!(other_iccid("8988"), "8989");
        assert_eq!(other_iccid("8989"), "8980");
    }
}
