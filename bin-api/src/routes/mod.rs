//! The `/api/admin` routes, one module per group. Handlers only extract, call the admin
//! service and answer; the `#[utoipa::path]` on each is its documentation.

use crate::app::AppState;
use utoipa_axum::router::OpenApiRouter;

mod configs;

/// Every admin route (paths relative to `/api/admin`).
pub(crate) fn all() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().merge(configs::routes())
}
