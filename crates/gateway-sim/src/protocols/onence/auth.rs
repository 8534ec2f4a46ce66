//! `POST /oauth/token`: HTTP Basic `client_id:client_secret` and a `client_credentials` grant
//! (JSON or form body) for a Bearer token; refusals are `Bearer_Token_400`.

use super::wire::{json_answer, token_error};
use super::{P, finish, gate, html_fault};
use crate::SimState;
use crate::stats::Outcome;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use gateway::CallKind;
use serde_json::{Value, json};

/// A token request refused with `error_code` (400).
fn token_refused(st: &SimState, error_code: &str, message: &str) -> Response {
    finish(st, Outcome::BadRequest, token_error(error_code, message))
}

pub(super) async fn token(State(st): State<SimState>, headers: HeaderMap, body: Bytes) -> Response {
    let pass = match gate(&st, &headers, CallKind::Realname, false).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    if let Some(resp) = html_fault(&st, pass.malformed) {
        return resp;
    }
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let grant_type = if ct.starts_with("application/json") {
        serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
            v.get("grant_type")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
    } else if ct.starts_with("application/x-www-form-urlencoded") {
        String::from_utf8_lossy(&body)
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "grant_type")
            .map(|(_, v)| v.to_owned())
    } else {
        return token_refused(
            &st,
            "UnsupportedContentTypeError",
            "Content-Type not supported",
        );
    };
    let Some(grant_type) = grant_type else {
        return token_refused(
            &st,
            "BodyValidationError",
            "Request body validation error: Missing attributes 'grant_type'",
        );
    };
    if grant_type != "client_credentials" {
        return token_refused(
            &st,
            "BodyValidationError",
            "Request body validation error: grant_type must be 'client_credentials'",
        );
    }
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64_decode(b.trim()))
        .and_then(|raw| String::from_utf8(raw).ok());
    let Some(basic) = basic else {
        return token_refused(
            &st,
            "AuthValidationError",
            "Auth header validation error: Missing attributes 'username'",
        );
    };
    let Some((user, password)) = basic.split_once(':') else {
        return token_refused(
            &st,
            "AuthValidationError",
            "Auth header validation error: Missing attributes 'password'",
        );
    };
    if !st.0.accounts.credential_is(P, "client_id", user) {
        return token_refused(&st, "BadCredentials", "User does not exist.");
    }
    if !st.0.accounts.credential_is(P, "client_secret", password) {
        return token_refused(&st, "BadCredentials", "Bad credentials.");
    }
    let (access_token, ttl) = st.0.accounts.issue_token(P);
    finish(
        &st,
        Outcome::Ok,
        json_answer(
            StatusCode::OK,
            &json!({
                "status_code": 200,
                "access_token": access_token,
                "token_type": "bearer",
                "expires_in": ttl.as_secs(),
                "userId": user,
                "scope": "all",
            }),
        ),
    )
}

/// Standard base64 (RFC 4648, padding optional); `None` on any other character.
pub(super) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    GeneralPurpose::new(&base64::alphabet::STANDARD, config)
        .decode(text)
        .ok()
}
