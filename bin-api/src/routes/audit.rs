//! The audit of writes through the API.

use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::pagination::PageParams;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use domain::AdminAudit;
use domain::store::Paged;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// Every write through the API (refused ones too), newest first. Admin keys only.
#[utoipa::path(get, path = "/admin-audit-log", tag = "operators",
    params(PageParams), responses((status = 200, body = Paged<AdminAudit>)))]
async fn list(
    State(state): State<AppState>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<Paged<AdminAudit>>> {
    Ok(Json(state.admin.audit_log(page.page()?).await?))
}
