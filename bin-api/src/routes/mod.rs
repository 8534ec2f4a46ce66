//! The `/api/admin` routes, one module per group. Handlers only extract, call the admin
//! service and answer; the `#[utoipa::path]` on each is its documentation.

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

mod alerts;
mod assets;
mod audit;
mod cards;
mod carriers;
mod cleanup;
mod concurrency;
mod configs;
mod devices;
mod manual_trigger;
mod monitoring;

/// Every admin route (paths relative to `/api/admin`).
pub(crate) fn all() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(configs::routes())
        .merge(monitoring::routes())
        .merge(concurrency::routes())
        .merge(alerts::routes())
        .merge(cleanup::routes())
        .merge(manual_trigger::routes())
        .merge(assets::routes())
        .merge(cards::routes())
        .merge(devices::routes())
        .merge(audit::routes())
        .merge(carriers::routes())
}
