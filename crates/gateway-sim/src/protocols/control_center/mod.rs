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

mod auth;
mod device;
mod search;
mod wire;

#[cfg(test)]
mod tests;

use super::{Malformed, Refusal, SimCardView, admit, done};
use crate::SimState;
use crate::routes::Injected;
use crate::stats::Outcome;
use auth::authorize;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use axum::{Json, Router};
use device::{
    device_details, malformed_details, malformed_edit, malformed_usage, status_word, usage_body,
};
use domain::CarrierProtocol;
use gateway::CallKind;
use search::{malformed_search, search_page};
use serde_json::{Value, json};
use std::collections::HashMap;
use wire::{cc_error, invalid_request, refusal, server_error, unknown_iccid};

const P: CarrierProtocol = CarrierProtocol::ControlCenter;

pub(super) fn routes() -> Router<SimState> {
    Router::new()
        .route("/v1/devices", get(search))
        .route("/v1/devices/{iccid}", device_get(&DETAILS).put(edit))
        .route("/v1/devices/{iccid}/ctdUsages", device_get(&CTD_USAGES))
}

/// What every call goes through: admitted as a request of `kind` (a scripted malformed answer
/// is the call's own `malformed`, any other refusal the platform's), then HTTP Basic, then the
/// call's `answer`; the outcome is recorded.
async fn call(
    st: &SimState,
    headers: &HeaderMap,
    kind: CallKind,
    malformed: impl FnOnce(Malformed) -> (Outcome, Response),
    answer: impl FnOnce() -> (Outcome, Response),
) -> Response {
    let (outcome, resp) = match admit(st, P, kind).await {
        Err(Refusal::Fault(Injected::Malformed(m))) => malformed(m),
        Err(r) => (r.outcome(), refusal(st, r)),
        Ok(_place) => match authorize(st, headers) {
            Err(resp) => (Outcome::BadRequest, *resp),
            Ok(()) => answer(),
        },
    };
    done(st, outcome);
    resp
}

/// A GET of one device: its stats kind, its rendering of a scripted malformed answer, and the
/// card's answer.
struct DeviceGet {
    kind: CallKind,
    malformed: fn(&SimState, &str, Malformed) -> Response,
    answer: fn(&SimState, &str, SimCardView) -> (Outcome, Response),
}

/// Get Device Details.
const DETAILS: DeviceGet = DeviceGet {
    kind: CallKind::Realname,
    malformed: malformed_details,
    answer: |_, iccid, view| {
        let status = status_word(view.network_status);
        (
            Outcome::Ok,
            Json(device_details(&view, iccid, status)).into_response(),
        )
    },
};

/// Get Device Usage (cycle to date): one usage answer, one growth step.
const CTD_USAGES: DeviceGet = DeviceGet {
    kind: CallKind::Usage,
    malformed: malformed_usage,
    answer: |st, iccid, view| match st.0.fleet.usage(iccid, st.current_month()) {
        None => (Outcome::NotFound, unknown_iccid()),
        Some((_, total_mb)) => {
            let status = status_word(view.network_status);
            match usage_body(&view, iccid, status, total_mb) {
                Some(r) => (Outcome::Ok, r),
                None => (Outcome::Error, server_error()),
            }
        }
    },
};

/// The handler of `device`: an unknown ICCID is the platform's 404.
fn device_get(device: &'static DeviceGet) -> MethodRouter<SimState> {
    get(
        move |State(st): State<SimState>, Path(iccid): Path<String>, headers: HeaderMap| async move {
            call(
                &st,
                &headers,
                device.kind,
                |m| (Outcome::Error, (device.malformed)(&st, &iccid, m)),
                || match st.0.fleet.view(&iccid) {
                    None => (Outcome::NotFound, unknown_iccid()),
                    Some(view) => (device.answer)(&st, &iccid, view),
                },
            )
            .await
        },
    )
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
    call(
        &st,
        &headers,
        kind.unwrap_or(CallKind::Stop),
        |m| (Outcome::Error, malformed_edit(&iccid, m)),
        || match (wanted, kind) {
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
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Search Devices.

async fn search(
    State(st): State<SimState>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    call(
        &st,
        &headers,
        CallKind::Realname,
        |m| match search_page(&st, &params) {
            Ok(page) => (Outcome::Error, malformed_search(page, m)),
            Err(resp) => (Outcome::BadRequest, *resp),
        },
        || match search_page(&st, &params) {
            Ok(page) => (Outcome::Ok, Json(page).into_response()),
            Err(resp) => (Outcome::BadRequest, *resp),
        },
    )
    .await
}
