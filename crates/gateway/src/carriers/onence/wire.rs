//! 1NCE's words: the answers the adapter reads, the SIM status table, dates, amounts and the
//! token endpoint's error codes.

use super::super::units::parse_amount;
use chrono::{DateTime, Months, NaiveDate, NaiveDateTime, Utc};
use domain::NetworkStatus;
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
pub(super) struct TokenAnswer {
    pub(super) access_token: String,
    #[serde(default)]
    pub(super) token_type: Option<String>,
    #[serde(default)]
    pub(super) expires_in: Option<u64>,
}

/// The fields of a SIM (`SIM_card`) the adapter reads.
#[derive(Deserialize)]
pub(super) struct SimAnswer {
    pub(super) iccid: String,
    #[serde(default)]
    pub(super) iccid_with_luhn: Option<String>,
    pub(super) status: String,
}

#[derive(Deserialize)]
pub(super) struct UsageAnswer {
    pub(super) stats: Vec<Value>,
}

#[derive(Deserialize)]
pub(super) struct QuotaAnswer {
    #[serde(default)]
    pub(super) volume: Option<Value>,
    #[serde(default)]
    pub(super) total_volume: Option<Value>,
    #[serde(default)]
    pub(super) expiry_date: Option<String>,
    /// v2 answers carry `{id, description: ACTIVE | EXHAUSTED | EXPIRED}`; v1 none.
    #[serde(default)]
    pub(super) status: Option<Value>,
}

/// Whether a 400 of `POST /oauth/token` (`Bearer_Token_400`) refuses the credentials:
/// `BadCredentials` / `AuthValidationError` are the credentials; `BodyValidationError` /
/// `UnsupportedContentTypeError` (and anything else) are the request's shape.
pub(super) fn refuses_credentials(body: &[u8]) -> bool {
    let code = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        v.get("errorCode")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    matches!(
        code.as_deref(),
        Some("BadCredentials" | "AuthValidationError")
    )
}

/// The SIM status table: 1NCE's words (SIM_card.status) to ours.
pub(super) fn network_of(word: &str) -> Option<NetworkStatus> {
    if word.eq_ignore_ascii_case("Enabled") {
        Some(NetworkStatus::Online)
    } else if word.eq_ignore_ascii_case("Disabled") {
        Some(NetworkStatus::Stopped)
    } else {
        None
    }
}

/// The word `PUT /v1/sims/{iccid}` takes for a network status.
pub(super) const fn word_of(status: NetworkStatus) -> &'static str {
    match status {
        NetworkStatus::Online => "Enabled",
        NetworkStatus::Stopped => "Disabled",
    }
}

/// The month's first and last day.
pub(super) fn month_bounds(first: NaiveDate) -> (NaiveDate, NaiveDate) {
    let last = first
        .checked_add_months(Months::new(1))
        .and_then(|d| d.pred_opt())
        .unwrap_or(first);
    (first, last)
}

/// A date-time as 1NCE writes them: ISO 8601 with `Z`, `+00:00` or `+0000`, or
/// `YYYY-MM-DD HH:MM:SS` (UTC).
pub(super) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Some(d.with_timezone(&Utc));
    }
    if let Ok(d) = DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z") {
        return Some(d.with_timezone(&Utc));
    }
    for f in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, f) {
            return Some(d.and_utc());
        }
    }
    None
}

/// `text` percent-encoded for a path segment or a query value (ICCIDs are digits; anything
/// else must not change the request's shape).
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `url` with the query `pairs`.
pub(super) fn with_query(mut url: String, pairs: &[(&str, String)]) -> String {
    for (i, (k, v)) in pairs.iter().enumerate() {
        url.push(if i == 0 { '?' } else { '&' });
        url.push_str(&escape(k));
        url.push('=');
        url.push_str(&escape(v));
    }
    url
}

/// A JSON number or string that may be negative (a quota's `volume` is, once overdrawn).
pub(super) fn signed_amount(v: &Value) -> Option<Decimal> {
    let text = match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    match text.strip_prefix('-') {
        Some(abs) => parse_amount(abs).map(|d| -d),
        None => parse_amount(&text),
    }
}
