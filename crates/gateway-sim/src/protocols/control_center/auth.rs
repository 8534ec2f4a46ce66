//! HTTP Basic `username:api_key`, the platform's only authentication.

use super::P;
use super::wire::{cc_error, invalid_credentials};
use crate::SimState;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

/// HTTP Basic `username:api_key`; `Err` is the platform's 401.
pub(super) fn authorize(st: &SimState, headers: &HeaderMap) -> Result<(), Box<Response>> {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        let mut resp = cc_error(
            StatusCode::UNAUTHORIZED,
            None,
            "Full authentication is required to access this resource",
        );
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"Jasper\""),
        );
        return Err(Box::new(resp));
    };
    let refused = || Box::new(invalid_credentials());
    let (scheme, encoded) = value.trim().split_once(' ').ok_or_else(refused)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(refused());
    }
    let decoded = base64_decode(encoded.trim()).ok_or_else(refused)?;
    let text = String::from_utf8(decoded).map_err(|_| refused())?;
    let (user, key) = text.split_once(':').ok_or_else(refused)?;
    let accounts = &st.0.accounts;
    if accounts.credential_is(P, "username", user) && accounts.credential_is(P, "api_key", key) {
        Ok(())
    } else {
        Err(refused())
    }
}

/// Standard base64 with padding (RFC 4648 §4); `None` when not well formed.
pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}
