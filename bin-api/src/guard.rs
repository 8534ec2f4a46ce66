//! The middleware in front of every `/api/admin` route: authenticate (an API key, or the
//! dashboard's session cookie and, for writes, its CSRF token), authorise, bound the body, run
//! the handler, and record every write (refused ones too) in `tb_admin_audit_log`.

use crate::audit;
use crate::auth::{Caller, Refusal, allowed, identify};
use crate::error::{Problem, internal};
use crate::session::{CSRF_HEADER, csrf_ok};
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The admin routes' prefix.
pub(crate) const PREFIX: &str = "/api/admin";
/// Body limit of `POST /cards/import` (100,000 rows of a few hundred bytes).
pub(crate) const IMPORT_BODY_LIMIT: usize = 32 * 1024 * 1024;
/// Body limit of every other route.
pub(crate) const BODY_LIMIT: usize = 2 * 1024 * 1024;

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The guard; see the module doc.
pub(crate) async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let template = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| req.uri().path().to_owned());
    let route = template
        .strip_prefix(PREFIX)
        .unwrap_or(&template)
        .to_owned();
    let path = req.uri().path().to_owned();
    let write = is_write(&method);
    let record = |caller: Option<&Caller>, body: &Bytes, status: StatusCode| {
        let entry = audit::entry(caller, &method, &template, &path, body, status);
        let store = state.audit.clone();
        async move {
            if let Err(e) = store.append(&entry).await {
                tracing::error!(error = %e, route = %entry.route, "cannot write the admin audit row");
            }
        }
    };

    let (caller, session) = match identify(&state.auth, &state.sessions, req.headers()).await {
        Ok(found) => found,
        Err(Refusal::Unauthenticated(why)) => {
            if write {
                record(None, &Bytes::new(), StatusCode::UNAUTHORIZED).await;
            }
            let mut response =
                Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", why).into_response();
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        Err(Refusal::Unavailable(e)) => return internal(&e).into_response(),
    };
    // A write from the dashboard's session must show the session's CSRF token: a page of
    // another site cannot read it (SameSite=Strict already keeps the cookie from it).
    if write && session.as_ref().is_some_and(|s| !csrf_ok(s, req.headers())) {
        record(Some(&caller), &Bytes::new(), StatusCode::FORBIDDEN).await;
        return Problem::new(
            StatusCode::FORBIDDEN,
            "csrf",
            format!("a write with the dashboard session needs its token in {CSRF_HEADER}"),
        )
        .into_response();
    }
    if !allowed(caller.role, &method, &route) {
        if write {
            record(Some(&caller), &Bytes::new(), StatusCode::FORBIDDEN).await;
        }
        return Problem::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("a `{}` key may not {} {}", caller.role, method, route),
        )
        .into_response();
    }
    if !write {
        let mut req = req;
        req.extensions_mut().insert(caller);
        return next.run(req).await;
    }
    let limit = if route == "/cards/import" {
        IMPORT_BODY_LIMIT
    } else {
        BODY_LIMIT
    };
    let (mut parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => {
            record(Some(&caller), &Bytes::new(), StatusCode::PAYLOAD_TOO_LARGE).await;
            return Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body-too-large",
                format!("the body must be at most {limit} bytes"),
            )
            .into_response();
        }
    };
    parts.extensions.insert(caller.clone());
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    record(Some(&caller), &bytes, response.status()).await;
    response
}
