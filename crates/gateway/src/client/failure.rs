//! What a call's answer or failure becomes: the `GatewayError` of a transport error, the
//! carrier's `Retry-After`, an answer for another card.

use crate::{CallKind, GatewayError};
use std::time::Duration;

/// `Retry-After` in seconds (the HTTP-date form is not used by carriers we know; ignored). The
/// platform adapters read their answers' headers with it too.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// A transport error as the gateway's: timeout, undecodable answer, or anything else.
pub(super) fn from_reqwest(e: reqwest::Error) -> GatewayError {
    if e.is_timeout() {
        GatewayError::Timeout
    } else if e.is_decode() {
        GatewayError::Decode(error_chain(&e))
    } else {
        GatewayError::Transport(error_chain(&e))
    }
}

/// The error and its causes on one line: reqwest's own message hides the interesting part.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The answer is for the card asked about.
pub(super) fn check_iccid(kind: CallKind, asked: &str, answered: &str) -> Result<(), GatewayError> {
    if asked == answered {
        Ok(())
    } else {
        Err(GatewayError::Decode(format!(
            "{kind} answer is for iccid {answered}, asked {asked}"
        )))
    }
}
