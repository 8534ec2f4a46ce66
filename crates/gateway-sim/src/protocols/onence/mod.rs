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

mod auth;
mod usage;
mod wire;

#[cfg(test)]
mod tests;

use super::{Malformed, Refusal, TokenCheck, admit, done};
use crate::SimState;
use crate::accounts::InFlight;
use crate::routes::Injected;
use crate::stats::Outcome;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use domain::{CarrierProtocol, NetworkStatus};
use gateway::CallKind;
use serde_json::{Value, json};
use std::collections::HashMap;
use wire::{html_page, json_answer, refused, sim_error, sim_json, unauthorized};

const P: CarrierProtocol = CarrierProtocol::OneNce;

pub(super) fn routes() -> Router<SimState> {
    Router::new()
        .route("/oauth/token", post(auth::token))
        .route("/v1/sims", get(list))
        .route("/v1/sims/{iccid}", get(sim).put(change))
        .route("/v1/sims/{iccid}/status", get(connectivity))
        .route("/v1/sims/{iccid}/usage", get(usage::usage))
        .route("/v1/sims/{iccid}/quota/data", get(usage::quota))
}

// ---------------------------------------------------------------------------------------------
// Admission, outcomes and the injected malformed answers.

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

/// Ends a request answered as asked, or with the injected `malformed` applied to its body.
fn answered(st: &SimState, malformed: Option<Malformed>, resp: Response) -> Response {
    finish(st, malformed.map_or(Outcome::Ok, malformed_outcome), resp)
}

/// The answer of an injected `html`: an HTTP 200 HTML page, nothing applied.
fn html_fault(st: &SimState, malformed: Option<Malformed>) -> Option<Response> {
    (malformed == Some(Malformed::Html))
        .then(|| finish(st, malformed_outcome(Malformed::Html), html_page()))
}

/// The answer of an injected `html` or, for an answer of one object, `drop_last` (`{}`).
fn object_fault(st: &SimState, malformed: Option<Malformed>) -> Option<Response> {
    match malformed {
        Some(Malformed::DropLast) => Some(finish(
            st,
            malformed_outcome(Malformed::DropLast),
            json_answer(StatusCode::OK, &json!({})),
        )),
        m => html_fault(st, m),
    }
}

/// A 400 of the SIM endpoints.
fn bad_request(st: &SimState, message: impl Into<String>) -> Response {
    finish(
        st,
        Outcome::BadRequest,
        sim_error(StatusCode::BAD_REQUEST, message),
    )
}

fn unknown_sim(st: &SimState, iccid: &str) -> Response {
    finish(
        st,
        Outcome::NotFound,
        sim_error(StatusCode::NOT_FOUND, format!("SIM {iccid} not found")),
    )
}

/// The start of a GET of one card's object: [`gate`] (Bearer), what `find` knows of the card
/// (else 404), then an injected `html` / `drop_last` answer. `Err`: the answer, its outcome
/// already recorded.
async fn open_card<T>(
    st: &SimState,
    headers: &HeaderMap,
    kind: CallKind,
    iccid: &str,
    find: impl FnOnce(&str) -> Option<T>,
) -> Result<(Pass, T), Response> {
    let pass = gate(st, headers, kind, true).await?;
    let Some(found) = find(iccid) else {
        return Err(unknown_sim(st, iccid));
    };
    if let Some(resp) = object_fault(st, pass.malformed) {
        return Err(resp);
    }
    Ok((pass, found))
}

// ---------------------------------------------------------------------------------------------
// General SIMs.

/// The query's whole number `name`: `default` when absent, `None` when not one `valid` takes.
fn number(
    q: &HashMap<String, String>,
    name: &str,
    default: usize,
    valid: impl Fn(usize) -> bool,
) -> Option<usize> {
    match q.get(name).map(|s| s.parse::<usize>()) {
        None => Some(default),
        Some(Ok(n)) if valid(n) => Some(n),
        Some(_) => None,
    }
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
    let Some(page) = number(&q, "page", 1, |n| n >= 1) else {
        return bad_request(&st, "page must be an integer of at least 1");
    };
    let Some(size) = number(&q, "pageSize", 10.min(max), |n| (1..=max).contains(&n)) else {
        return bad_request(&st, format!("pageSize must be an integer from 1 to {max}"));
    };
    if let Some(resp) = html_fault(&st, pass.malformed) {
        return resp;
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
    answered(&st, pass.malformed, resp)
}

/// `GET /v1/sims/{iccid}`.
async fn sim(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
) -> Response {
    let find = |i: &str| st.0.fleet.view(i);
    let (pass, view) = match open_card(&st, &headers, CallKind::Realname, &iccid, find).await {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    let body = sim_json(&view, pass.malformed);
    answered(&st, pass.malformed, json_answer(StatusCode::OK, &body))
}

/// `GET /v1/sims/{iccid}/status`: the connectivity, not the SIM's Enabled/Disabled state.
async fn connectivity(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
) -> Response {
    let find = |i: &str| st.0.fleet.network(i);
    let (pass, network) = match open_card(&st, &headers, CallKind::Realname, &iccid, find).await {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    let status = match (pass.malformed, network) {
        (Some(Malformed::UnknownStatus), _) => "DETACHED",
        (_, NetworkStatus::Online) => "ATTACHED",
        (_, NetworkStatus::Stopped) => "OFFLINE",
    };
    let body = json!({"status": status, "location": null, "pdp_context": null, "services": []});
    answered(&st, pass.malformed, json_answer(StatusCode::OK, &body))
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
        return bad_request(&st, "Request body is not valid JSON");
    };
    if let Some(named) = body.get("iccid").and_then(Value::as_str)
        && named != iccid
    {
        return bad_request(
            &st,
            "The ICCID of the body differs from the ICCID of the path",
        );
    }
    if st.0.fleet.view(&iccid).is_none() {
        return unknown_sim(&st, &iccid);
    }
    if let Some(resp) = html_fault(&st, pass.malformed) {
        return resp;
    }
    let Some(kind) = kind else {
        if wanted.is_some() {
            return bad_request(&st, "status must be one of: Enabled, Disabled");
        }
        // A change of label or IMEI lock alone: nothing the fleet keeps.
        return finish(&st, Outcome::Ok, StatusCode::OK.into_response());
    };
    match st.0.fleet.set_network(&iccid, kind) {
        Some(_) => finish(&st, Outcome::Ok, StatusCode::OK.into_response()),
        None => unknown_sim(&st, &iccid),
    }
}
