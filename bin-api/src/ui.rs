//! The dashboard: static HTML, CSS and JavaScript embedded in the binary and served
//! without auth at `/` and `/ui/*`, each with a content-hash `ETag` (a page view revalidates
//! and gets `304 Not Modified` for what it already has). The operator signs in with an API key
//! once (`POST /ui/session`, `session.rs`): the answer sets an `HttpOnly` session cookie and
//! the page keeps nothing but the key's name and role, the deployment's time zone
//! (`CMP_TIMEZONE`) and the session's CSRF token. `GET /ui/session` tells a reloaded page who
//! is signed in; `DELETE /ui/session` signs out. The pages read their data from the
//! `/api/admin` routes with that cookie. No inline script runs (the Content-Security-Policy
//! allows scripts from this server only), and nothing is fetched from outside the server.

use crate::auth::{Refusal, identify};
use crate::error::{Problem, internal};
use crate::extract::ApiJson;
use crate::keys::hash_key;
use crate::session::{self, Session};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

const INDEX: &str = include_str!("../ui/index.html");

/// The assets under `/ui/`: name, content type, body.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../ui/style.css"),
    ),
    ("i18n.js", JS, include_str!("../ui/i18n.js")),
    ("core.js", JS, include_str!("../ui/core.js")),
    ("chart.js", JS, include_str!("../ui/chart.js")),
    ("overview.js", JS, include_str!("../ui/overview.js")),
    ("phrases.js", JS, include_str!("../ui/phrases.js")),
    ("cards.js", JS, include_str!("../ui/cards.js")),
    ("usage.js", JS, include_str!("../ui/usage.js")),
    ("configs.js", JS, include_str!("../ui/configs.js")),
    ("ops.js", JS, include_str!("../ui/ops.js")),
    ("alerts.js", JS, include_str!("../ui/alerts.js")),
    ("budget.js", JS, include_str!("../ui/budget.js")),
    ("carriers.js", JS, include_str!("../ui/carriers.js")),
    ("app.js", JS, include_str!("../ui/app.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// Scripts and styles from this server only: no inline script, no `eval`, no other origin.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `/`, `/ui/session` and `/ui/{asset}`.
pub(crate) fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/ui/session", get(session).post(sign_in).delete(sign_out))
        .route("/ui/{asset}", get(asset))
        .with_state(state)
}

/// The `ETag` of a body: a hash of its content, the same on every replica of a release.
fn etag_of(body: &str) -> String {
    let digest = Sha256::digest(body.as_bytes());
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// The index's and each asset's `ETag`, computed once.
static ETAGS: LazyLock<Vec<String>> = LazyLock::new(|| {
    std::iter::once(INDEX)
        .chain(ASSETS.iter().map(|(_, _, body)| *body))
        .map(etag_of)
        .collect()
});

/// A static page: `304` when the browser already holds this version.
fn page(
    content_type: &'static str,
    body: &'static str,
    etag: &str,
    request: &HeaderMap,
) -> Response {
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut r = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = body.into_response();
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        r
    };
    let h = r.headers_mut();
    // Revalidated on every view: a new release is picked up at once, an unchanged asset
    // costs a 304 without its body.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

async fn index(headers: HeaderMap) -> Response {
    page("text/html; charset=utf-8", INDEX, &ETAGS[0], &headers)
}

async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().position(|(n, _, _)| *n == name) {
        Some(i) => {
            let (_, content_type, body) = ASSETS[i];
            page(content_type, body, &ETAGS[i + 1], &headers)
        }
        None => Problem::of_status(StatusCode::NOT_FOUND).into_response(),
    }
}

/// What the page is told of its caller: the key's name and role, the deployment's zone and,
/// signed in with the cookie, the session's CSRF token.
fn who(state: &AppState, caller: &crate::auth::Caller, session: Option<&Session>) -> Response {
    let no_store = [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))];
    (
        no_store,
        Json(json!({
            "name": caller.name,
            "role": caller.role,
            "timezone": state.admin.timezone().name(),
            "csrf": session.map(|s| s.csrf.as_str()),
        })),
    )
        .into_response()
}

fn refused(refusal: Refusal) -> Response {
    match refusal {
        Refusal::Unauthenticated(why) => {
            Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", why).into_response()
        }
        Refusal::Unavailable(e) => internal(&e).into_response(),
    }
}

/// The caller (a key in `Authorization`, or the session cookie); `401` without either.
async fn session(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match identify(&state.auth, &state.sessions, &headers).await {
        Ok((caller, session)) => who(&state, &caller, session.as_ref()),
        Err(refusal) => refused(refusal),
    }
}

/// The body of a sign-in.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignIn {
    key: String,
}

/// Exchanges an API key for a session cookie (`401` for an unknown or revoked key).
async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SignIn>,
) -> Response {
    let hash = hash_key(body.key.trim());
    let caller = match state.auth.by_hash(hash.clone()).await {
        Ok(caller) => caller,
        Err(refusal) => return refused(refusal),
    };
    let opened = match state.sessions.open(hash).await {
        Ok(opened) => opened,
        Err(e) => return internal(&e).into_response(),
    };
    tracing::info!(key = %caller.name, role = %caller.role, "dashboard sign-in");
    let mut r = who(&state, &caller, Some(&opened.session));
    r.headers_mut().insert(
        header::SET_COOKIE,
        session::set_cookie(&opened.token, &headers),
    );
    r
}

/// Ends the session of the cookie, on the server and in the browser.
async fn sign_out(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = session::cookie(&headers)
        && let Err(e) = state.sessions.close(token).await
    {
        return internal(&e).into_response();
    }
    let mut r = StatusCode::NO_CONTENT.into_response();
    r.headers_mut()
        .insert(header::SET_COOKIE, session::clear_cookie(&headers));
    r
}

#[cfg(test)]
mod tests {
    use super::{ASSETS, INDEX};

    /// Every `http://` or `https://` in a text: the dashboard must fetch nothing from outside.
    fn external_urls(text: &str) -> Vec<String> {
        ["http://", "https://"]
            .iter()
            .flat_map(|scheme| text.match_indices(scheme).map(|(i, _)| i))
            .map(|i| text[i..].chars().take(60).collect())
            .collect()
    }

    #[test]
    fn no_asset_names_an_external_url() {
        assert!(
            external_urls(INDEX).is_empty(),
            "{:?}",
            external_urls(INDEX)
        );
        for (name, _, body) in ASSETS {
            let found = external_urls(body);
            assert!(found.is_empty(), "{name}: {found:?}");
        }
    }

    #[test]
    fn the_page_loads_every_asset_and_only_those() {
        for (name, _, _) in ASSETS {
            if name.ends_with(".js") || name.ends_with(".css") {
                assert!(INDEX.contains(&format!("/ui/{name}")), "{name} not loaded");
            }
        }
        assert_eq!(INDEX.matches("/ui/").count(), ASSETS.len());
    }
}
