//! Control Center's words: the SIM status table, the request texts, the error body and the
//! error-code table, and the checks every device answer goes through.

use crate::carriers::transport::{Answer, CarrierHttp};
use crate::{AnswerFault, GatewayError};
use domain::NetworkStatus;
use serde::Deserialize;
use serde_json::Value;

/// The documented SIM status values and what they mean for the network: the platform lets a
/// card on the network in `ACTIVATED`, `ACTIVATION_READY` and `TEST_READY` (the last two are
/// pre-billing states in which the device can establish data sessions); in every other
/// documented state it does not. `None`: not a documented value.
pub(crate) fn network_of(status: &str) -> Option<NetworkStatus> {
    match status {
        "ACTIVATED" | "ACTIVATION_READY" | "TEST_READY" => Some(NetworkStatus::Online),
        "DEACTIVATED" | "INVENTORY" | "RETIRED" | "PURGED" | "REPLACED" => {
            Some(NetworkStatus::Stopped)
        }
        _ => None,
    }
}

/// The status word an Edit Device Details request asks for.
pub(super) fn status_word(n: NetworkStatus) -> &'static str {
    match n {
        NetworkStatus::Online => "ACTIVATED",
        NetworkStatus::Stopped => "DEACTIVATED",
    }
}

/// An ICCID as one path segment (ICCIDs are digits; anything else is percent-encoded).
pub(super) fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `{"errorMessage", "errorCode"}`, the code a string (read a number too).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorBody {
    error_code: Option<Value>,
    error_message: Option<String>,
}

impl ErrorBody {
    fn code(&self) -> Option<String> {
        match self.error_code.as_ref()? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

/// A non-success answer as our error, from the platform's error table (see the docs page):
/// 401 (`10000001` or no code) and 400 `10000030` (role without access) → `Auth`; 404
/// `20000001` → `NotFound`; 429 → `Throttled`; an HTML page → `Unintelligible`; anything
/// else → `Carrier` with the body's start.
pub(super) fn refused(http: &CarrierHttp, what: &str, answer: &Answer) -> GatewayError {
    if answer.status == 429 {
        return GatewayError::Throttled {
            retry_after: answer.retry_after(),
        };
    }
    // A console host or a proxy, not the REST tier: nothing about the card is known.
    if let Err(e) = http.refuse_html(what, answer) {
        return e;
    }
    let body: ErrorBody = serde_json::from_slice(&answer.body).unwrap_or_default();
    let code = body.code();
    let message = http.scrub(body.error_message.as_deref().unwrap_or_default());
    match (answer.status, code.as_deref()) {
        (401, _) => GatewayError::Auth(format!(
            "{what}: Control Center refused the credentials ({}: {message})",
            code.as_deref().unwrap_or("no code")
        )),
        (400, Some("10000030")) => GatewayError::Auth(format!(
            "{what}: the API user's role has no access to this function (10000030: {message})"
        )),
        (404, Some("20000001")) => GatewayError::NotFound,
        (status, _) => GatewayError::Carrier {
            status,
            body: http.excerpt(answer),
        },
    }
}

/// The text field `name` of an answer: absent or null is `MissingField`, another type
/// `BadValue`.
fn text<'a>(
    http: &CarrierHttp,
    what: &str,
    body: &'a Value,
    name: &str,
) -> Result<&'a str, GatewayError> {
    match body.get(name) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => {
            Err(http.fault(AnswerFault::MissingField, format!("{what}: no `{name}`")))
        }
        Some(other) => Err(http.fault(
            AnswerFault::BadValue,
            format!("{what}: `{name}` is {other}"),
        )),
    }
}

/// The answer's `iccid`, which must be the one asked.
pub(super) fn check_iccid(
    http: &CarrierHttp,
    what: &str,
    asked: &str,
    body: &Value,
) -> Result<(), GatewayError> {
    match text(http, what, body, "iccid")? {
        s if s == asked => Ok(()),
        s => Err(http.fault(
            AnswerFault::WrongIccid,
            format!("{what}: asked {asked}, the answer is for {s}"),
        )),
    }
}

/// `status` of an answer through [`network_of`].
pub(super) fn network(
    http: &CarrierHttp,
    what: &str,
    body: &Value,
) -> Result<NetworkStatus, GatewayError> {
    let s = text(http, what, body, "status")?;
    network_of(s).ok_or_else(|| {
        http.fault(
            AnswerFault::UnknownStatus,
            format!("{what}: SIM status `{s}` is not a documented value"),
        )
    })
}
