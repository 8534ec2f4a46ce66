//! The router: `/api/admin/*` behind the guard, the OpenAPI document and its
//! docs page, the dashboard (`/`, `/ui/*`), the health endpoints; every error answered as problem+json.

use crate::error::{PROBLEM_JSON, Problem};
use crate::guard::{PREFIX, guard};
use crate::state::AppState;
use crate::{openapi, routes, stream, ui};
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use std::time::Duration;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

/// How long one request may take before it is answered 503: room for an import of 100,000
/// cards on a busy machine (docs/decisions.md), far below any load balancer's idle timeout
/// worth having.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The admin routes behind the guard, the carriers' push streams beside them (their own
/// per-carrier auth, no API key: `stream.rs`), and the OpenAPI document of both.
pub(crate) fn admin_routes(state: AppState) -> (Router, utoipa::openapi::OpenApi) {
    let (router, mut api) = OpenApiRouter::with_openapi(openapi::base())
        .nest(PREFIX, routes::all())
        .split_for_parts();
    let router = router
        .route_layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state.clone());
    let (streams, streams_api) = stream::routes().split_for_parts();
    api.merge(streams_api);
    let router = router.merge(streams.with_state(state));
    (router, openapi::finish(api))
}

/// The whole application: admin routes, documents, `extra` (health and metrics), fallbacks.
pub(crate) fn app(state: AppState, extra: Router) -> Router {
    let (admin, api) = admin_routes(state.clone());
    admin
        .merge(ui::router(state))
        .merge(SwaggerUi::new("/api/docs").url("/api/openapi.json", api))
        .merge(extra)
        .fallback(|| async { Problem::of_status(StatusCode::NOT_FOUND) })
        .layer(middleware::from_fn(problem_for_bare_errors))
        .layer(DefaultBodyLimit::disable())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ))
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
}

/// The span of one request: `debug`, so it costs nothing while traces are off and `CMP_LOG`
/// is at `info`; a write (anything but GET, HEAD, OPTIONS) is always exported when traces are
/// on, a read at `CMP_OTEL_POLL_SAMPLE` (`ops::RootSampler`).
fn request_span(req: &Request) -> tracing::Span {
    let method = req.method();
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| req.uri().path(), |p| p.as_str());
    let write = !matches!(
        *method,
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    );
    tracing::debug_span!(target: "cmp_api", "api_request", method = %method, route,
        always_sampled = write)
}

/// Error answers that axum or tower produce themselves (405, a timeout, ...) carry no
/// problem body: give them one. Answers of `/readyz` and `/metrics` are left alone.
async fn problem_for_bare_errors(req: Request, next: Next) -> Response {
    let under_api = req.uri().path().starts_with("/api/");
    let response = next.run(req).await;
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    if (status.is_client_error() || status.is_server_error()) && !is_problem && under_api {
        let mut fixed = Problem::of_status(status).into_response();
        for name in [header::ALLOW, header::RETRY_AFTER] {
            if let Some(v) = response.headers().get(&name) {
                fixed.headers_mut().insert(name, v.clone());
            }
        }
        return fixed;
    }
    response
}
