//! Search Devices: `GET /v1/devices?modifiedSince=…&pageSize=…&pageNumber=…`.

use super::P;
use super::device::{UNDOCUMENTED_STATUS, other_iccid, rate_plan, status_word};
use super::wire::{html_page, invalid_request};
use crate::SimState;
use crate::fleet::SimCardView;
use crate::protocols::Malformed;
use axum::Json;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use domain::NetworkStatus;
use serde_json::{Value, json};
use std::collections::HashMap;

/// The parameters Search Devices recognises (custom-field filters are not simulated).
const SEARCH_PARAMS: [&str; 6] = [
    "accountId",
    "modifiedSince",
    "modifiedTill",
    "status",
    "pageSize",
    "pageNumber",
];

/// `yyyy-MM-ddTHH:mm:ss+hh:mm` (also `Z` or `+hhmm`).
pub(super) fn parse_instant(s: &str) -> Option<DateTime<Utc>> {
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

/// The platform's 400 `10000028`, boxed.
fn bad(message: &str) -> Box<Response> {
    Box::new(invalid_request(message))
}

/// One page of the search, or the platform's 400.
pub(super) fn search_page(
    st: &SimState,
    params: &HashMap<String, String>,
) -> Result<Value, Box<Response>> {
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

pub(super) fn malformed_search(mut page: Value, m: Malformed) -> Response {
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
