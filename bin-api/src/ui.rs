//! The dashboard (issue 16): static HTML, CSS and JavaScript embedded in the binary and served
//! without auth at `/` and `/ui/*`. The pages read their data from the authenticated
//! `/api/admin` routes with the key the operator enters; `GET /ui/session` tells the page the
//! key's name and role so it can hide the write controls a role may not use (the guard
//! refuses them anyway), and the deployment's time zone (`CMP_TIMEZONE`) every date of the
//! pages is shown in. Nothing is fetched from outside the server.

use crate::auth::Refusal;
use crate::error::{Problem, internal};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

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

/// `/`, `/ui/session` and `/ui/{asset}`.
pub(crate) fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/ui/session", get(session))
        .route("/ui/{asset}", get(asset))
        .with_state(state)
}

fn page(content_type: &'static str, body: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX)
}

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => page(content_type, body),
        None => Problem::of_status(StatusCode::NOT_FOUND).into_response(),
    }
}

/// The caller's key name and role, and the time zone of the deployment (`401` without a
/// valid key).
async fn session(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match state.auth.authenticate(&headers).await {
        Ok(caller) => Json(json!({
            "name": caller.name,
            "role": caller.role,
            "timezone": state.admin.timezone().name(),
        }))
        .into_response(),
        Err(Refusal::Unauthenticated(why)) => {
            Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", why).into_response()
        }
        Err(Refusal::Unavailable(e)) => internal(&e).into_response(),
    }
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
