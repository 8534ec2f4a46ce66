//! emnify REST API (`https://cdn.emnify.net`), as its public documentation describes it
//! (`docs/carriers/emnify.md`): an application token exchanged for a JWT, SIMs addressed by
//! emnify's numeric SIM id and found by ICCID through the SIM list filter, the SIM status
//! `{id, description}` changed by `PATCH`, month-to-date data volume in MB from the SIM
//! statistics, the data quota of the SIM's endpoint.
//!
//! | method | path (under the API root) | what |
//! | --- | --- | --- |
//! | POST | `/api/v1/authenticate` | `{application_token}` → `{auth_token}` (a JWT with `exp`) |
//! | GET | `/api/v1/sim?q=iccid:…` / `q=iccid_with_luhn:…` / `q=id:…` | the SIM list, filtered, paged |
//! | GET | `/api/v1/sim/status` | the SIM status table |
//! | GET | `/api/v1/sim/{sim_id}` | one SIM |
//! | PATCH | `/api/v1/sim/{sim_id}` | `{status: {id: 1 \| 2}}` → 204 |
//! | GET | `/api/v1/sim/{sim_id}/stats` | `{current_month, last_month, last_hour}` |
//! | GET | `/api/v1/endpoint/{endpoint_id}/quota/data` | the endpoint's data quota |
//!
//! The simulator's choices where the documents are silent: a SIM's id is a stable hash of its
//! ICCID (the same on every run, so an adapter's cached id survives a restart), its endpoint's
//! id equals its SIM id, a fleet ICCID of 20 characters is the `iccid_with_luhn` (the `iccid`
//! is its first 19), any other is the `iccid` (the Luhn digit appended makes the other form).

use super::{Malformed, Refusal, TokenCheck, admit, done};
use crate::SimState;
use crate::stats::Outcome;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use domain::{CarrierPackage, CarrierProtocol, NetworkStatus, PackageStatus};
use gateway::CallKind;
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

const P: CarrierProtocol = CarrierProtocol::Emnify;

/// An answer that ends a request early (boxed: a `Response` is large).
type Refused = Box<Response>;

/// The ICCID the simulator names in a `wrong_iccid` answer.
const OTHER_ICCID: &str = "89883030000000000017";

pub(super) fn routes() -> Router<SimState> {
    Router::new()
        .route("/api/v1/authenticate", post(authenticate))
        .route("/api/v1/sim", get(list_sims))
        .route("/api/v1/sim/status", get(sim_statuses))
        .route("/api/v1/sim/{sim_id}", get(get_sim).patch(patch_sim))
        .route("/api/v1/sim/{sim_id}/stats", get(sim_stats))
        .route("/api/v1/endpoint/{endpoint_id}/quota/data", get(quota_data))
}

// ---------------------------------------------------------------------------------------------
// Answers in emnify's words.

/// `{error_code, error_token, message}`: the documented error representation.
fn error(status: StatusCode, code: u32, token: &str, message: impl Into<String>) -> Response {
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

fn not_found(message: impl Into<String>) -> Response {
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

fn validation(message: impl Into<String>) -> Response {
    error(
        StatusCode::UNPROCESSABLE_ENTITY,
        1400,
        "InputValidationFailed",
        message,
    )
}

fn html() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>Maintenance</title></head>\
         <body><h1>emnify is down for maintenance</h1></body></html>",
    )
        .into_response()
}

/// A JSON body written as text, so that decimal figures keep every digit (no float).
fn raw_json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A refusal before the request was looked at, in emnify's words, with its outcome.
fn refusal(st: &SimState, r: Refusal) -> (Outcome, Response) {
    use crate::routes::Injected;
    let resp = match r {
        Refusal::OverRate | Refusal::OverConcurrency => too_many(1),
        Refusal::Fault(f) => match f {
            Injected::TimedOut => (
                StatusCode::GATEWAY_TIMEOUT,
                axum::Json(json!({"message": "Endpoint request timed out"})),
            )
                .into_response(),
            Injected::Status(429) => too_many(crate::routes::retry_after_secs(st)),
            Injected::Throttled { retry_after_secs } => too_many(retry_after_secs),
            Injected::OverQuota => too_many(1),
            Injected::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(json!({"message": "Service Unavailable"})),
            )
                .into_response(),
            Injected::Status(401) => error(
                StatusCode::UNAUTHORIZED,
                1102,
                "InvalidToken",
                "Invalid token",
            ),
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
                (
                    status,
                    axum::Json(json!({"message": "Internal server error"})),
                )
                    .into_response()
            }
            Injected::Status(code) => {
                let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
                error(status, 1400, "InputValidationFailed", "scripted failure")
            }
            // Callers render malformed answers themselves; reaching here is a bug: a 500.
            Injected::Malformed(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                axum::Json(json!({"message": "Internal server error"})),
            )
                .into_response(),
        },
    };
    (r.outcome(), resp)
}

// ---------------------------------------------------------------------------------------------
// Authentication: an application token for a JWT.

#[derive(Debug, Deserialize)]
struct AuthenticateBody {
    application_token: Option<String>,
}

async fn authenticate(State(st): State<SimState>, body: Bytes) -> Response {
    let _guard = match admit(&st, P, CallKind::Realname).await {
        Ok(g) => g,
        Err(Refusal::Fault(crate::routes::Injected::Malformed(Malformed::Html))) => {
            done(&st, Outcome::Error);
            return html();
        }
        Err(Refusal::Fault(crate::routes::Injected::Malformed(_))) => {
            // Nothing to drop or rename in a token answer: answered as usual.
            None
        }
        Err(r) => {
            let (o, resp) = refusal(&st, r);
            done(&st, o);
            return resp;
        }
    };
    let given = match serde_json::from_slice::<AuthenticateBody>(&body) {
        Ok(b) => b.application_token,
        Err(e) => {
            done(&st, Outcome::BadRequest);
            return error(
                StatusCode::BAD_REQUEST,
                1400,
                "InputValidationFailed",
                format!("Input validation failed: {e}"),
            );
        }
    };
    let ok = given
        .as_deref()
        .is_some_and(|t| st.0.accounts.credential_is(P, "application_token", t));
    if !ok {
        done(&st, Outcome::BadRequest);
        // "The response body is empty for most authentication failures."
        return (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "application/json")],
            "",
        )
            .into_response();
    }
    let (opaque, ttl) = st.0.accounts.issue_token(P);
    let now = wall_secs();
    let jwt = jwt::issue(&opaque, now, now + ttl.as_secs(), signing_key());
    done(&st, Outcome::Ok);
    axum::Json(json!({ "auth_token": jwt })).into_response()
}

/// The bearer JWT checked: signature, then the token it carries (`jti`) known and alive.
fn check_auth(st: &SimState, headers: &HeaderMap) -> Result<(), Refused> {
    let invalid = || {
        Box::new(error(
            StatusCode::UNAUTHORIZED,
            1102,
            "InvalidToken",
            "Invalid token",
        ))
    };
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(invalid)?;
    let token = value
        .strip_prefix("Bearer ")
        .map(str::trim)
        .ok_or_else(invalid)?;
    let jti = jwt::verify(token, signing_key()).ok_or_else(invalid)?;
    match st.0.accounts.check_token(P, &jti) {
        TokenCheck::Valid => Ok(()),
        TokenCheck::Expired => Err(Box::new(error(
            StatusCode::UNAUTHORIZED,
            1103,
            "TokenExpired",
            "Token expired",
        ))),
        TokenCheck::Unknown => Err(invalid()),
    }
}

fn wall_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The key the simulated platform signs its JWTs with: drawn once per process.
fn signing_key() -> u64 {
    static KEY: OnceLock<u64> = OnceLock::new();
    *KEY.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        crate::mix64(nanos ^ u64::from(std::process::id()))
    })
}

/// The JWTs the simulated platform issues: `base64url(header).base64url(payload).signature`,
/// the payload carrying `exp` and the simulator's token as `jti`, signed with a keyed hash of
/// the simulator's seed (HS256 in spirit; no client ever checks it, the platform does).
mod jwt {
    use crate::mix64;

    pub(super) fn issue(jti: &str, iat: u64, exp: u64, seed: u64) -> String {
        let header = b64url(br#"{"alg":"HS256","typ":"JWT"}"#);
        let payload = b64url(
            format!(
                r#"{{"sub":"sim-emnify","esc.app":1,"esc.appName":"gateway-sim","iat":{iat},"exp":{exp},"jti":"{jti}"}}"#
            )
            .as_bytes(),
        );
        let signing_input = format!("{header}.{payload}");
        let sig = sign(&signing_input, seed);
        format!("{signing_input}.{sig}")
    }

    /// The `jti` of a well-formed, correctly signed JWT.
    pub(super) fn verify(token: &str, seed: u64) -> Option<String> {
        let mut parts = token.split('.');
        let (h, p, s) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        if sign(&format!("{h}.{p}"), seed) != s {
            return None;
        }
        let payload = b64url_decode(p)?;
        let v: serde_json::Value = serde_json::from_slice(&payload).ok()?;
        v.get("jti")?.as_str().map(str::to_owned)
    }

    fn sign(input: &str, seed: u64) -> String {
        let mut out = Vec::with_capacity(32);
        let mut h = seed ^ 0x656d_6e69_6679;
        for lane in 0..4u64 {
            let mut x = h ^ lane.wrapping_mul(0x9e37_79b9);
            for b in input.bytes() {
                x = mix64(x ^ u64::from(b));
            }
            h = mix64(x);
            out.extend_from_slice(&h.to_be_bytes());
        }
        b64url(&out)
    }

    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    /// Base64url without padding (RFC 7515 §2).
    pub(super) fn b64url(data: &[u8]) -> String {
        let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
        for chunk in data.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
            let chars = chunk.len() + 1;
            for i in 0..chars {
                let idx = (n >> (18 - 6 * i)) & 63;
                s.push(ALPHABET[idx as usize] as char);
            }
        }
        s
    }

    pub(super) fn b64url_decode(s: &str) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(s.len() * 3 / 4);
        let mut acc = 0u32;
        let mut bits = 0;
        for c in s.bytes() {
            let v = ALPHABET.iter().position(|a| *a == c)? as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        Some(out)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn base64url_round_trips() {
            for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
                assert_eq!(b64url_decode(&b64url(s.as_bytes())).unwrap(), s.as_bytes());
            }
            assert_eq!(b64url(b"foobar"), "Zm9vYmFy");
            assert_eq!(b64url(b"fo"), "Zm8");
        }

        #[test]
        fn a_jwt_verifies_and_a_tampered_one_does_not() {
            let t = issue("abc", 1, 2, 7);
            assert_eq!(t.split('.').count(), 3);
            assert_eq!(verify(&t, 7).as_deref(), Some("abc"));
            assert_eq!(verify(&t, 8), None);
            let mut parts: Vec<&str> = t.split('.').collect();
            let forged = b64url(br#"{"jti":"abc","exp":99999999999}"#);
            parts[1] = &forged;
            assert_eq!(verify(&parts.join("."), 7), None);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SIM ids: emnify's numeric id of a SIM, stable per ICCID.

/// Every SIM id the simulator has shown, to find the card back (shared by the simulators of one
/// process: the id depends on the ICCID alone, so they agree).
fn registry() -> &'static Mutex<HashMap<u64, Box<str>>> {
    static IDS: OnceLock<Mutex<HashMap<u64, Box<str>>>> = OnceLock::new();
    IDS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The SIM id of an ICCID: FNV-1a, kept within JSON's exact integers (2^53).
fn sim_id_of(iccid: &str) -> u64 {
    let h = iccid.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let id = h & ((1 << 53) - 1);
    let id = id.max(1);
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(id)
        .or_insert_with(|| iccid.into());
    id
}

fn iccid_of_id(id: u64) -> Option<String> {
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&id)
        .map(|s| s.to_string())
}

/// The Luhn check digit of a digit string; `None` if it holds anything but digits.
fn luhn_digit(digits: &str) -> Option<char> {
    let mut sum = 0u32;
    for (i, c) in digits.bytes().rev().enumerate() {
        if !c.is_ascii_digit() {
            return None;
        }
        let mut d = u32::from(c - b'0');
        if i % 2 == 0 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    char::from_digit((10 - sum % 10) % 10, 10)
}

/// (`iccid`, `iccid_with_luhn`) of a fleet ICCID.
fn iccid_forms(fleet_iccid: &str) -> (String, String) {
    if fleet_iccid.len() == 20 {
        (fleet_iccid[..19].to_owned(), fleet_iccid.to_owned())
    } else {
        let luhn = luhn_digit(fleet_iccid).unwrap_or('0');
        (fleet_iccid.to_owned(), format!("{fleet_iccid}{luhn}"))
    }
}

/// The fleet card a `q` criterion names, if any.
fn find_by(st: &SimState, field: &str, value: &str) -> Option<String> {
    let fleet = &st.0.fleet;
    let known = |iccid: &str| fleet.network(iccid).is_some();
    match field {
        "iccid_with_luhn" => {
            if value.len() == 20 && known(value) {
                return Some(value.to_owned());
            }
            let base = value.get(..value.len().checked_sub(1)?)?;
            (base.len() != 20 && known(base) && iccid_forms(base).1 == value)
                .then(|| base.to_owned())
        }
        "iccid" => {
            if value.len() != 20 && known(value) {
                return Some(value.to_owned());
            }
            (0..10)
                .map(|d| format!("{value}{d}"))
                .find(|c| c.len() == 20 && known(c))
        }
        "id" => {
            let id = value.parse::<u64>().ok()?;
            iccid_of_id(id).filter(|i| known(i))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// SIM records.

/// The status table (`GET /api/v1/sim/status`).
const STATUSES: [(u8, &str); 5] = [
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
fn sim_object(named: &str, status: (u64, &str)) -> serde_json::Value {
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

fn shown_status(network: NetworkStatus, malformed: Option<Malformed>) -> (u64, &'static str) {
    if malformed == Some(Malformed::UnknownStatus) {
        (7, "Quarantined")
    } else {
        let (id, d) = status_of(network);
        (u64::from(id), d)
    }
}

/// Admits a request of `kind`: the platform's limits and faults, then the bearer token. `Err`:
/// the answer to send (already recorded). `Ok(Some(m))`: a malformed answer to render.
async fn enter(
    st: &SimState,
    kind: CallKind,
    headers: &HeaderMap,
) -> Result<(Option<crate::accounts::InFlight>, Option<Malformed>), Refused> {
    let (guard, malformed) = match admit(st, P, kind).await {
        Ok(g) => (g, None),
        Err(Refusal::Fault(crate::routes::Injected::Malformed(m))) => (None, Some(m)),
        Err(r) => {
            let (o, resp) = refusal(st, r);
            done(st, o);
            return Err(Box::new(resp));
        }
    };
    if let Err(resp) = check_auth(st, headers) {
        done(st, Outcome::BadRequest);
        return Err(resp);
    }
    if malformed == Some(Malformed::Html) {
        done(st, Outcome::Error);
        return Err(Box::new(html()));
    }
    Ok((guard, malformed))
}

fn finish(st: &SimState, malformed: Option<Malformed>, resp: Response) -> Response {
    done(
        st,
        if malformed.is_some() {
            Outcome::Error
        } else {
            Outcome::Ok
        },
    );
    resp
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    q: Option<String>,
    page: Option<String>,
    per_page: Option<String>,
    sort: Option<String>,
}

/// `GET /api/v1/sim`: the list, filtered by `q` (`iccid`, `iccid_with_luhn`, `id`), paged by
/// `page` (from 1) and `per_page` (default 2000, at most the account's `page_size_max`); paging
/// metadata in the headers, as the conventions say.
async fn list_sims(
    State(st): State<SimState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Response {
    let (_guard, malformed) = match enter(&st, CallKind::Realname, &headers).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    let max = st.account(P).page_size_max;
    let parse = |v: &Option<String>, default: usize| -> Result<usize, Refused> {
        match v {
            None => Ok(default),
            Some(s) => s
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| Box::new(validation(format!("Invalid paging parameter {s}")))),
        }
    };
    let page = match parse(&q.page, 1) {
        Ok(p) => p,
        Err(r) => {
            done(&st, Outcome::BadRequest);
            return *r;
        }
    };
    let per_page = match parse(&q.per_page, 2000.min(max)) {
        Ok(p) if p <= max => p,
        Ok(p) => {
            done(&st, Outcome::BadRequest);
            return validation(format!("per_page {p} is above the maximum {max}"));
        }
        Err(r) => {
            done(&st, Outcome::BadRequest);
            return *r;
        }
    };
    if let Some(sort) = &q.sort {
        let field = sort.trim_start_matches(['+', '-']);
        if !matches!(field, "id" | "iccid") {
            done(&st, Outcome::BadRequest);
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                1302,
                "InvalidSortCriteria",
                format!("Sort criteria {sort} is invalid"),
            );
        }
    }
    let (iccids, total): (Vec<String>, usize) = match q.q.as_deref().filter(|s| !s.is_empty()) {
        Some(filter) => {
            let mut found: Option<Option<String>> = None;
            for crit in filter.split(',') {
                let Some((field, value)) = crit.split_once(':') else {
                    done(&st, Outcome::BadRequest);
                    return invalid_query(crit);
                };
                if !matches!(field, "iccid" | "iccid_with_luhn" | "id") {
                    done(&st, Outcome::BadRequest);
                    return invalid_query(crit);
                }
                let this = find_by(&st, field, value);
                // Several criteria: all must name the same card.
                found = Some(match found {
                    None => this,
                    Some(prev) => prev.filter(|p| this.as_deref() == Some(p.as_str())),
                });
            }
            let hit: Vec<String> = found.flatten().into_iter().collect();
            let n = hit.len();
            (
                hit.into_iter()
                    .skip((page - 1).saturating_mul(per_page))
                    .take(per_page)
                    .collect(),
                n,
            )
        }
        None => {
            let (cards, total) =
                st.0.fleet
                    .list((page - 1).saturating_mul(per_page), per_page, None);
            (cards.into_iter().map(|c| c.iccid).collect(), total)
        }
    };
    let mut items: Vec<serde_json::Value> = iccids
        .iter()
        .filter_map(|i| {
            let network = st.0.fleet.network(i)?;
            let named = if malformed == Some(Malformed::WrongIccid) {
                OTHER_ICCID
            } else {
                i.as_str()
            };
            Some(sim_object(named, shown_status(network, malformed)))
        })
        .collect();
    if malformed == Some(Malformed::DropLast) {
        items.pop();
    }
    let mut resp = axum::Json(serde_json::Value::Array(items)).into_response();
    let pages = total.div_ceil(per_page).max(1);
    for (name, value) in [
        ("x-count-per-page", per_page),
        ("x-current-page", page),
        ("x-total-count", total),
        ("x-total-pages", pages),
    ] {
        resp.headers_mut().insert(name, HeaderValue::from(value));
    }
    finish(&st, malformed, resp)
}

fn invalid_query(crit: &str) -> Response {
    error(
        StatusCode::UNPROCESSABLE_ENTITY,
        1301,
        "InvalidQueryCriteria",
        format!("Search criteria {crit} is invalid"),
    )
}

/// `GET /api/v1/sim/status`: the status table (the adapters' probe).
async fn sim_statuses(State(st): State<SimState>, headers: HeaderMap) -> Response {
    let (_guard, malformed) = match enter(&st, CallKind::Realname, &headers).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    let mut items: Vec<serde_json::Value> = STATUSES
        .iter()
        .map(|(id, d)| json!({"id": id, "description": d}))
        .collect();
    if malformed == Some(Malformed::DropLast) {
        items.pop();
    }
    finish(&st, malformed, axum::Json(items).into_response())
}

/// The card of a path's SIM id; `Err`: emnify's 404 (or 422 for an id that is no number).
fn card_of(st: &SimState, raw: &str) -> Result<(u64, String), Refused> {
    let Ok(id) = raw.parse::<u64>() else {
        return Err(Box::new(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            1403,
            "InvalidFormat",
            format!("SIM - id has invalid format: expecting Number, got {raw}"),
        )));
    };
    match iccid_of_id(id).filter(|i| st.0.fleet.network(i).is_some()) {
        Some(iccid) => Ok((id, iccid)),
        None => Err(Box::new(not_found(format!("SIM with id {id} not found")))),
    }
}

/// `GET /api/v1/sim/{sim_id}`.
async fn get_sim(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
) -> Response {
    let (_guard, malformed) = match enter(&st, CallKind::Realname, &headers).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    let (_, iccid) = match card_of(&st, &raw) {
        Ok(c) => c,
        Err(resp) => {
            done(&st, Outcome::NotFound);
            return *resp;
        }
    };
    let network = st.0.fleet.network(&iccid).unwrap_or(NetworkStatus::Online);
    let body = match malformed {
        Some(Malformed::DropLast) => json!({}),
        Some(Malformed::WrongIccid) => sim_object(OTHER_ICCID, shown_status(network, None)),
        m => sim_object(&iccid, shown_status(network, m)),
    };
    finish(&st, malformed, axum::Json(body).into_response())
}

#[derive(Debug, Deserialize)]
struct PatchBody {
    status: Option<PatchStatus>,
}

#[derive(Debug, Deserialize)]
struct PatchStatus {
    id: Option<i64>,
}

/// `PATCH /api/v1/sim/{sim_id}` with `{status: {id}}`: 1 (Activated) resumes, 2 (Suspended)
/// suspends; answers 204 without a body. Allowed moves: Issued → Activated / Factory Test,
/// Factory Test → Activated, Activated ↔ Suspended; a SIM already in the asked status answers
/// 204 too.
async fn patch_sim(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    body: Bytes,
) -> Response {
    let wanted = serde_json::from_slice::<PatchBody>(&body)
        .ok()
        .and_then(|b| b.status)
        .and_then(|s| s.id);
    let kind = if wanted == Some(1) {
        CallKind::Start
    } else {
        CallKind::Stop
    };
    let card = card_of(&st, &raw);
    if let Ok((_, iccid)) = &card {
        st.0.fleet.count_command(iccid, kind);
    }
    let (_guard, _malformed) = match enter(&st, kind, &headers).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    let (_, iccid) = match card {
        Ok(c) => c,
        Err(resp) => {
            done(&st, Outcome::NotFound);
            return *resp;
        }
    };
    match wanted {
        Some(1 | 2) => {}
        Some(other) => {
            done(&st, Outcome::BadRequest);
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                1406,
                "NotAllowed",
                format!("Changing the SIM status to {other} is not allowed"),
            );
        }
        None => {
            done(&st, Outcome::BadRequest);
            return validation("Input validation failed: SIM - status is required");
        }
    }
    if st.0.fleet.set_network(&iccid, kind).is_none() {
        done(&st, Outcome::NotFound);
        return not_found(format!("SIM with id {raw} not found"));
    }
    // The malformations have nothing to act on in a 204 without a body: the change is made and
    // answered as usual (Html was answered in `enter`).
    done(&st, Outcome::Ok);
    StatusCode::NO_CONTENT.into_response()
}

/// `GET /api/v1/sim/{sim_id}/stats`: month-to-date data in MB (`current_month.data.volume`),
/// present only when the month has traffic; `last_hour` always.
async fn sim_stats(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
) -> Response {
    let (_guard, malformed) = match enter(&st, CallKind::Usage, &headers).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    let (id, iccid) = match card_of(&st, &raw) {
        Ok(c) => c,
        Err(resp) => {
            done(&st, Outcome::NotFound);
            return *resp;
        }
    };
    let Some((month, total)) = st.0.fleet.usage(&iccid, st.current_month()) else {
        done(&st, Outcome::NotFound);
        return not_found(format!("SIM with id {id} not found"));
    };
    if malformed == Some(Malformed::DropLast) {
        return finish(&st, malformed, raw_json(StatusCode::OK, "{}".to_owned()));
    }
    let shown_id = if malformed == Some(Malformed::WrongIccid) {
        sim_id_of(OTHER_ICCID)
    } else {
        id
    };
    let month = super::month_string(month);
    let last_hour = r#""last_hour":{}"#;
    let body = if total.is_zero() {
        format!("{{{last_hour}}}")
    } else {
        let stat_id = format!("{shown_id}{}5", month.replace('-', ""));
        let data = data_object(shown_id, &month, total, &stat_id);
        format!(r#"{{"current_month":{{"data":{data}}},{last_hour}}}"#)
    };
    finish(&st, malformed, raw_json(StatusCode::OK, body))
}

/// One `data` statistics object; `volume` written as the exact decimal text.
fn data_object(sim_id: u64, month: &str, total: Decimal, stat_id: &str) -> String {
    let now = Utc::now().format("%Y-%m-%dT%H:%M:%S%.3f+0000");
    format!(
        r#"{{"id":{stat_id},"sim_id":{sim_id},"month":"{month}-01","volume":{total},"volume_tx":0,"volume_rx":{total},"traffic_type_id":5,"traffic_type":{{"id":5,"description":"Data","unit":"MB"}},"last_updated":"{now}","cost":null,"currency_id":1,"currency":{{"id":1,"code":"EUR","symbol":"€"}}}}"#
    )
}

/// `GET /api/v1/endpoint/{endpoint_id}/quota/data`: the data quota, made from the card's first
/// package in force (else its first expired one) that has a limit; none: 404.
async fn quota_data(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
) -> Response {
    let (_guard, malformed) = match enter(&st, CallKind::Packages, &headers).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    // The endpoint of a SIM has the SIM's id.
    let (id, iccid) = match card_of(&st, &raw) {
        Ok(c) => c,
        Err(_) => {
            done(&st, Outcome::NotFound);
            return not_found(format!("Endpoint with id {raw} not found"));
        }
    };
    let packages = st.0.fleet.packages(&iccid).unwrap_or_default();
    let pick = |s: PackageStatus| {
        packages
            .iter()
            .find(|p| p.status == s && p.limit_mb.is_some())
    };
    let Some(pkg) = pick(PackageStatus::Active).or_else(|| pick(PackageStatus::Expired)) else {
        done(&st, Outcome::NotFound);
        return not_found(format!("Data quota for endpoint with id {id} not found"));
    };
    if malformed == Some(Malformed::DropLast) {
        return finish(&st, malformed, raw_json(StatusCode::OK, "{}".to_owned()));
    }
    let body = quota_object(pkg, malformed == Some(Malformed::UnknownStatus));
    finish(&st, malformed, raw_json(StatusCode::OK, body))
}

fn quota_object(pkg: &CarrierPackage, unknown_status: bool) -> String {
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
        Some(t) => format!("\"{}\"", t.format("%Y-%m-%dT%H:%M:%S%.3f+0000")),
        None => "null".to_owned(),
    };
    format!(
        r#"{{"status":{{"id":{sid},"description":"{sdesc}"}},"volume":{left},"expiry_date":{},"peak_throughput":128000,"action_on_exhaustion":{{"id":1,"description":"Block"}},"auto_refill":0,"threshold_percentage":10,"threshold_volume":null,"last_volume_added":{limit},"last_status_change_date":{}}}"#,
        stamp(pkg.expires_at),
        stamp(pkg.activated_at),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_and_iccid_forms() {
        // The documents' sample SIM: 8988303000008013931 → 89883030000080139311.
        assert_eq!(luhn_digit("8988303000008013931"), Some('1'));
        assert_eq!(
            iccid_forms("8988303000008013931"),
            (
                "8988303000008013931".to_owned(),
                "89883030000080139311".to_owned()
            )
        );
        assert_eq!(iccid_forms("89860000000000000001").0, "8986000000000000000");
    }

    #[test]
    fn sim_ids_are_stable_and_found_back() {
        let a = sim_id_of("89860000000000000001");
        assert_eq!(a, sim_id_of("89860000000000000001"));
        assert!(a < (1 << 53));
        assert_eq!(iccid_of_id(a).as_deref(), Some("89860000000000000001"));
    }
}
