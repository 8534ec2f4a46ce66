//! emnify's answers as the adapter reads them: the status tables, the serde types, figures,
//! timestamps and the JWT's `exp` claim.

use super::super::units;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use domain::{NetworkStatus, PackageStatus};
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::Value;

/// The SIM status table (`GET /api/v1/sim/status`, "SIM lifecycle"): what the card's network
/// service is in our words. Anything else is not understood.
pub(crate) fn network_of(status_id: i64) -> Option<NetworkStatus> {
    match status_id {
        0 => Some(NetworkStatus::Stopped), // Issued: not yet able to attach
        1 => Some(NetworkStatus::Online),  // Activated
        2 => Some(NetworkStatus::Stopped), // Suspended
        3 => Some(NetworkStatus::Stopped), // Deleted
        4 => Some(NetworkStatus::Online),  // Factory Test: attaches within its test volume
        _ => None,
    }
}

/// The data quota status table (`GET /api/v1/endpoint/{id}/quota/data`).
pub(super) fn quota_status_of(id: i64) -> Option<(PackageStatus, &'static str)> {
    match id {
        1 => Some((PackageStatus::Active, "ACTIVE")),
        // Used up but still the endpoint's quota until it expires.
        2 => Some((PackageStatus::Active, "EXHAUSTED")),
        3 => Some((PackageStatus::Expired, "EXPIRED")),
        _ => None,
    }
}

/// emnify's status ids come as numbers, the quota's sometimes as strings (`"1"`).
pub(super) fn id_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct StatusRef {
    pub(super) id: Value,
    #[serde(default)]
    pub(super) description: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct EndpointRef {
    #[serde(default)]
    pub(super) id: Option<u64>,
}

/// The fields of a SIM object the adapter reads.
#[derive(Debug, Deserialize)]
pub(super) struct SimRecord {
    pub(super) id: u64,
    #[serde(default)]
    pub(super) iccid: Option<String>,
    #[serde(default)]
    pub(super) iccid_with_luhn: Option<String>,
    pub(super) status: StatusRef,
    #[serde(default)]
    pub(super) endpoint: Option<EndpointRef>,
}

impl SimRecord {
    pub(super) fn names(&self, iccid: &str) -> bool {
        self.iccid.as_deref() == Some(iccid) || self.iccid_with_luhn.as_deref() == Some(iccid)
    }

    pub(super) fn shown_iccid(&self) -> &str {
        self.iccid_with_luhn
            .as_deref()
            .or(self.iccid.as_deref())
            .unwrap_or("none")
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct AuthAnswer {
    #[serde(default)]
    pub(super) auth_token: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct QuotaAnswer {
    pub(super) status: StatusRef,
    #[serde(default)]
    pub(super) volume: Value,
    #[serde(default)]
    pub(super) last_volume_added: Value,
    #[serde(default)]
    pub(super) expiry_date: Value,
}

/// A figure as emnify writes it: a JSON number (a double, so possibly in exponent form, as a
/// JVM writes small doubles) or a string. `None`: not a non-negative decimal.
pub(crate) fn figure(v: &Value) -> Option<Decimal> {
    let text = match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.trim().to_owned(),
        _ => return None,
    };
    if text.contains(['e', 'E']) {
        let d = Decimal::from_scientific(&text).ok()?;
        (d >= Decimal::ZERO).then_some(d)
    } else {
        units::parse_amount(&text)
    }
}

/// An emnify timestamp: ISO 8601 (`2019-01-31T00:00:00.000+0000` or RFC 3339), or a date.
pub(crate) fn timestamp(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Some(d.with_timezone(&Utc));
    }
    for f in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%dT%H:%M:%S%z"] {
        if let Ok(d) = DateTime::parse_from_str(t, f) {
            return Some(d.with_timezone(&Utc));
        }
    }
    for f in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, f) {
            return Some(d.and_utc());
        }
    }
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc())
}

/// Base64url (with or without padding; the standard alphabet too) to bytes.
fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    use base64::alphabet;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let lenient =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    GeneralPurpose::new(&alphabet::URL_SAFE, lenient)
        .decode(s)
        .or_else(|_| GeneralPurpose::new(&alphabet::STANDARD, lenient).decode(s))
        .ok()
}

/// The `exp` claim (unix seconds) of a JWT, unverified.
pub(super) fn jwt_exp(token: &str) -> Option<i64> {
    let payload = token.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&b64url_decode(payload)?).ok()?;
    id_of(claims.get("exp")?)
}
