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
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let bytes = s.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let chunks = bytes.len() / 4;
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let pad = chunk.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != chunks) {
            return None;
        }
        let mut n = 0u32;
        for c in &chunk[..4 - pad] {
            n = (n << 6) | value(*c)?;
        }
        n <<= 6 * pad as u32;
        let b = n.to_be_bytes();
        out.extend_from_slice(&b[1..4 - pad]);
    }
    Some(out)
}
