//! A device in the platform's words: the status word, Get Device Details and Get Device Usage
//! answers, and the malformed answers a fault script asks of the single-device calls.

use super::wire::{html_page, server_error, unknown_iccid};
use crate::SimState;
use crate::fleet::SimCardView;
use crate::protocols::Malformed;
use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{TimeZone, Utc};
use domain::NetworkStatus;
use rust_decimal::Decimal;
use serde_json::{Value, json};

/// Bytes in the megabyte the fleet counts in.
const BYTES_PER_MB: i64 = 1_048_576;

/// The status a `Malformed::UnknownStatus` answer carries: not in the documented table.
pub(super) const UNDOCUMENTED_STATUS: &str = "SUSPENDED";

pub(super) fn status_word(n: NetworkStatus) -> &'static str {
    match n {
        NetworkStatus::Online => "ACTIVATED",
        NetworkStatus::Stopped => "DEACTIVATED",
    }
}

/// Another card's ICCID: the last digit changed.
pub(super) fn other_iccid(iccid: &str) -> String {
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

pub(super) fn rate_plan(view: &SimCardView) -> String {
    view.packages
        .first()
        .map(|p| p.external_id.clone())
        .unwrap_or_else(|| "SIM Monthly 1GB".to_owned())
}

/// The fields every device answer starts with, and the call's own `more`.
fn device_answer(view: &SimCardView, iccid: &str, status: &str, more: Value) -> Value {
    let mut answer = json!({
        "iccid": iccid,
        "imsi": format!("46001{}", tail_digits(iccid, 10)),
        "msisdn": format!("1064{}", tail_digits(iccid, 9)),
        "imei": "",
        "status": status,
        "ratePlan": rate_plan(view),
        "communicationPlan": "SIM Data CP",
    });
    if let (Some(fields), Value::Object(more)) = (answer.as_object_mut(), more) {
        fields.extend(more);
    }
    answer
}

/// The Get Device Details answer of a card.
pub(super) fn device_details(view: &SimCardView, iccid: &str, status: &str) -> Value {
    device_answer(
        view,
        iccid,
        status,
        json!({
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
        }),
    )
}

/// The ctdUsages answer, `ctdDataUsage` written as the exact decimal byte count. `None`: the
/// figure overflows.
pub(super) fn usage_body(
    view: &SimCardView,
    iccid: &str,
    status: &str,
    total_mb: Decimal,
) -> Option<Response> {
    let bytes = total_mb
        .checked_mul(Decimal::from(BYTES_PER_MB))?
        .normalize();
    let head = device_answer(
        view,
        iccid,
        status,
        json!({
            "ctdSMSUsage": 0,
            "ctdVoiceUsage": 0,
            "ctdSessionCount": view.usage_queries,
            "overageLimitReached": false,
            "overageLimitOverride": "DEFAULT",
        }),
    )
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

/// A malformed single-device answer: `answer` of the card; without one, the HTML page asked
/// or the platform's unknown ICCID.
fn malformed_of(
    st: &SimState,
    iccid: &str,
    m: Malformed,
    answer: impl FnOnce(SimCardView) -> Response,
) -> Response {
    match st.0.fleet.view(iccid) {
        Some(view) => answer(view),
        None => match m {
            Malformed::Html => html_page(),
            _ => unknown_iccid(),
        },
    }
}

pub(super) fn malformed_details(st: &SimState, iccid: &str, m: Malformed) -> Response {
    malformed_of(st, iccid, m, |view| match m {
        Malformed::Html => html_page(),
        // A single-card answer without its card.
        Malformed::DropLast => Json(json!({})).into_response(),
        Malformed::WrongIccid => {
            let status = status_word(view.network_status);
            Json(device_details(&view, &other_iccid(iccid), status)).into_response()
        }
        Malformed::UnknownStatus => {
            Json(device_details(&view, iccid, UNDOCUMENTED_STATUS)).into_response()
        }
    })
}

pub(super) fn malformed_usage(st: &SimState, iccid: &str, m: Malformed) -> Response {
    malformed_of(st, iccid, m, |view| {
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
    })
}

/// A malformed answer to an edit: the change is not applied.
pub(super) fn malformed_edit(iccid: &str, m: Malformed) -> Response {
    match m {
        Malformed::Html => html_page(),
        Malformed::DropLast => Json(json!({})).into_response(),
        Malformed::WrongIccid => Json(json!({ "iccid": other_iccid(iccid) })).into_response(),
        Malformed::UnknownStatus => {
            Json(json!({ "iccid": iccid, "status": UNDOCUMENTED_STATUS })).into_response()
        }
    }
}
