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

mod auth;
mod ids;
mod jwt;
mod list;
mod wire;

#[cfg(test)]
mod tests;

use super::{Malformed, Refusal, admit, done};
use crate::SimState;
use crate::stats::Outcome;
use auth::{authenticate, check_auth};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use domain::{CarrierProtocol, NetworkStatus, PackageStatus};
use gateway::CallKind;
use ids::{iccid_of_id, sim_id_of};
use list::list_sims;
use serde::Deserialize;
use serde_json::json;
use wire::{
    STATUSES, empty_object, error, html, not_found, quota_object, raw_json, refusal, shown_status,
    sim_object, stats_body, validation,
};

const P: CarrierProtocol = CarrierProtocol::Emnify;

/// An answer that ends a request early (boxed: a `Response` is large).
type Refused = Box<Response>;

/// What [`enter`] lets through: the request's concurrency slot, and the malformed answer to
/// render, if one is scripted.
type Entered = (Option<crate::accounts::InFlight>, Option<Malformed>);

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

/// Admits a request of `kind`: the platform's limits and faults, then the bearer token. `Err`:
/// the answer to send (already recorded). `Ok(Some(m))`: a malformed answer to render.
async fn enter(st: &SimState, kind: CallKind, headers: &HeaderMap) -> Result<Entered, Refused> {
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

/// [`enter`], then the card of the path's SIM id (its id and ICCID). A card not found is
/// recorded `NotFound` and answered as `missing` makes of [`card_of`]'s answer.
async fn enter_card(
    st: &SimState,
    kind: CallKind,
    headers: &HeaderMap,
    raw: &str,
    missing: impl FnOnce(Refused) -> Refused,
) -> Result<(Entered, u64, String), Refused> {
    let entered = enter(st, kind, headers).await?;
    let (id, iccid) = card_of(st, raw).map_err(|r| missing(ended(st, Outcome::NotFound, r)))?;
    Ok((entered, id, iccid))
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

/// `answer`, recorded as `outcome`: a request ended before its usual answer.
fn ended<R>(st: &SimState, outcome: Outcome, answer: R) -> R {
    done(st, outcome);
    answer
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
    let ((_guard, malformed), _, iccid) =
        match enter_card(&st, CallKind::Realname, &headers, &raw, |r| r).await {
            Ok(v) => v,
            Err(resp) => return *resp,
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
        Err(resp) => return *ended(&st, Outcome::NotFound, resp),
    };
    match wanted {
        Some(1 | 2) => {}
        Some(other) => {
            let msg = format!("Changing the SIM status to {other} is not allowed");
            let resp = error(StatusCode::UNPROCESSABLE_ENTITY, 1406, "NotAllowed", msg);
            return ended(&st, Outcome::BadRequest, resp);
        }
        None => {
            let resp = validation("Input validation failed: SIM - status is required");
            return ended(&st, Outcome::BadRequest, resp);
        }
    }
    if st.0.fleet.set_network(&iccid, kind).is_none() {
        let resp = not_found(format!("SIM with id {raw} not found"));
        return ended(&st, Outcome::NotFound, resp);
    }
    // The malformations have nothing to act on in a 204 without a body: the change is made and
    // answered as usual (Html was answered in `enter`).
    ended(&st, Outcome::Ok, StatusCode::NO_CONTENT.into_response())
}

/// `GET /api/v1/sim/{sim_id}/stats`: month-to-date data in MB (`current_month.data.volume`),
/// present only when the month has traffic; `last_hour` always.
async fn sim_stats(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
) -> Response {
    let ((_guard, malformed), id, iccid) =
        match enter_card(&st, CallKind::Usage, &headers, &raw, |r| r).await {
            Ok(v) => v,
            Err(resp) => return *resp,
        };
    let Some((month, total)) = st.0.fleet.usage(&iccid, st.current_month()) else {
        let resp = not_found(format!("SIM with id {id} not found"));
        return ended(&st, Outcome::NotFound, resp);
    };
    if malformed == Some(Malformed::DropLast) {
        return finish(&st, malformed, empty_object());
    }
    let shown_id = if malformed == Some(Malformed::WrongIccid) {
        sim_id_of(OTHER_ICCID)
    } else {
        id
    };
    let body = stats_body(shown_id, &super::month_string(month), total);
    finish(&st, malformed, raw_json(StatusCode::OK, body))
}

/// `GET /api/v1/endpoint/{endpoint_id}/quota/data`: the data quota, made from the card's first
/// package in force (else its first expired one) that has a limit; none: 404.
async fn quota_data(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
) -> Response {
    // The endpoint of a SIM has the SIM's id.
    let no_endpoint = |_| Box::new(not_found(format!("Endpoint with id {raw} not found")));
    let ((_guard, malformed), id, iccid) =
        match enter_card(&st, CallKind::Packages, &headers, &raw, no_endpoint).await {
            Ok(v) => v,
            Err(resp) => return *resp,
        };
    let packages = st.0.fleet.packages(&iccid).unwrap_or_default();
    let pick = |s: PackageStatus| {
        packages
            .iter()
            .find(|p| p.status == s && p.limit_mb.is_some())
    };
    let Some(pkg) = pick(PackageStatus::Active).or_else(|| pick(PackageStatus::Expired)) else {
        let resp = not_found(format!("Data quota for endpoint with id {id} not found"));
        return ended(&st, Outcome::NotFound, resp);
    };
    if malformed == Some(Malformed::DropLast) {
        return finish(&st, malformed, empty_object());
    }
    let body = quota_object(pkg, malformed == Some(Malformed::UnknownStatus));
    finish(&st, malformed, raw_json(StatusCode::OK, body))
}
