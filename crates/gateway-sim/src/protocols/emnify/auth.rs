//! Authentication: an application token for a JWT, and the bearer JWT checked on every call.

use super::super::{Malformed, Refusal, TokenCheck, admit, done};
use super::wire::{error, html, input_invalid, invalid_token, raw_json, refusal};
use super::{P, Refused, jwt};
use crate::SimState;
use crate::routes::Injected;
use crate::stats::Outcome;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gateway::CallKind;
use serde::Deserialize;
use serde_json::json;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, Deserialize)]
struct AuthenticateBody {
    application_token: Option<String>,
}

/// `POST /api/v1/authenticate`: `{application_token}` → `{auth_token}`.
pub(super) async fn authenticate(State(st): State<SimState>, body: Bytes) -> Response {
    let _guard = match admit(&st, P, CallKind::Realname).await {
        Ok(g) => g,
        Err(Refusal::Fault(Injected::Malformed(Malformed::Html))) => {
            done(&st, Outcome::Error);
            return html();
        }
        Err(Refusal::Fault(Injected::Malformed(_))) => {
            // Nothing to drop or rename in a token answer: answered as usual.
            None
        }
        Err(r) => {
            let (o, resp) = refusal(&st, r);
            done(&st, o);
            return resp;
        }
    };
    let given = match serde_json::from_slice::<AuthenticateBody>(&body) {
        Ok(b) => b.application_token,
        Err(e) => {
            done(&st, Outcome::BadRequest);
            let msg = format!("Input validation failed: {e}");
            return input_invalid(StatusCode::BAD_REQUEST, msg);
        }
    };
    let ok = given
        .as_deref()
        .is_some_and(|t| st.0.accounts.credential_is(P, "application_token", t));
    if !ok {
        done(&st, Outcome::BadRequest);
        // "The response body is empty for most authentication failures."
        return raw_json(StatusCode::UNAUTHORIZED, String::new());
    }
    let (opaque, ttl) = st.0.accounts.issue_token(P);
    let now = wall_secs();
    let jwt = jwt::issue(&opaque, now, now + ttl.as_secs(), signing_key());
    done(&st, Outcome::Ok);
    axum::Json(json!({ "auth_token": jwt })).into_response()
}

/// The bearer JWT checked: signature, then the token it carries (`jti`) known and alive.
pub(super) fn check_auth(st: &SimState, headers: &HeaderMap) -> Result<(), Refused> {
    let invalid = || Box::new(invalid_token());
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(invalid)?;
    let token = value
        .strip_prefix("Bearer ")
        .map(str::trim)
        .ok_or_else(invalid)?;
    let jti = jwt::verify(token, signing_key()).ok_or_else(invalid)?;
    match st.0.accounts.check_token(P, &jti) {
        TokenCheck::Valid => Ok(()),
        TokenCheck::Expired => Err(Box::new(error(
            StatusCode::UNAUTHORIZED,
            1103,
            "TokenExpired",
            "Token expired",
        ))),
        TokenCheck::Unknown => Err(invalid()),
    }
}

fn wall_secs() -> u64 {
    since_epoch().as_secs()
}

/// The key the simulated platform signs its JWTs with: drawn once per process.
fn signing_key() -> u64 {
    static KEY: OnceLock<u64> = OnceLock::new();
    *KEY.get_or_init(|| {
        let nanos = since_epoch().as_nanos() as u64;
        crate::mix64(nanos ^ u64::from(std::process::id()))
    })
}

/// The wall clock since the Unix epoch (zero before it).
fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}
