//! Data cleanup (9): configs per table, preview, run, logs, progress.

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::mirror::mirror;
use crate::pagination::PageParams;
use crate::state::AppState;
use crate::view::{PreviewRow, RunStarted};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use domain::store::Paged;
use domain::{CleanupConfig, CleanupConfigId, CleanupConfigInput, CleanupLog};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(preview))
        .routes(routes!(run))
        .routes(routes!(logs))
        .routes(routes!(progress))
}

/// List cleanup configs (one per table).
#[utoipa::path(get, path = "/data-cleanup-configs", tag = "data-cleanup",
    params(PageParams),
    responses((status = 200, body = Paged<CleanupConfig>)))]
async fn list(
    State(state): State<AppState>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<Paged<CleanupConfig>>> {
    Ok(Json(state.ops.cleanup.list(page.page()?).await?))
}

/// Create the config of a table (one per table: a second is a 409).
#[utoipa::path(post, path = "/data-cleanup-configs", tag = "data-cleanup",
    request_body = CleanupConfigInput,
    responses((status = 201, body = CleanupConfig)))]
async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CleanupConfigInput>,
) -> ApiResult<(StatusCode, Json<CleanupConfig>)> {
    Ok((
        StatusCode::CREATED,
        Json(state.ops.cleanup.create(body).await?),
    ))
}

/// One config.
#[utoipa::path(get, path = "/data-cleanup-configs/{id}", tag = "data-cleanup",
    params(("id" = i64, Path, description = "config id")),
    responses((status = 200, body = CleanupConfig)))]
async fn get_one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<CleanupConfig>> {
    Ok(Json(state.ops.cleanup.get(CleanupConfigId(id)).await?))
}

/// Replace a config.
#[utoipa::path(put, path = "/data-cleanup-configs/{id}", tag = "data-cleanup",
    params(("id" = i64, Path, description = "config id")),
    request_body = CleanupConfigInput,
    responses((status = 200, body = CleanupConfig)))]
async fn update(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<CleanupConfigInput>,
) -> ApiResult<Json<CleanupConfig>> {
    Ok(Json(
        state.ops.cleanup.update(CleanupConfigId(id), body).await?,
    ))
}

/// Delete a config (its table is then never cleaned).
#[utoipa::path(delete, path = "/data-cleanup-configs/{id}", tag = "data-cleanup",
    params(("id" = i64, Path, description = "config id")),
    responses((status = 204, description = "Deleted")))]
async fn delete(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<StatusCode> {
    state.ops.cleanup.delete(CleanupConfigId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// What a run now would remove: counts per table; planner estimates for whole partitions.
#[utoipa::path(get, path = "/data-cleanup/preview", tag = "data-cleanup",
    responses((status = 200, body = Vec<PreviewRow>)))]
async fn preview(State(state): State<AppState>) -> ApiResult<Json<Vec<PreviewRow>>> {
    Ok(Json(mirror(state.ops.cleanup.preview().await?)))
}

/// Start a run in the background; answers its id at once. 409 while a run is going on.
#[utoipa::path(post, path = "/data-cleanup/run", tag = "data-cleanup",
    responses((status = 202, body = RunStarted)))]
async fn run(State(state): State<AppState>) -> ApiResult<(StatusCode, Json<RunStarted>)> {
    Ok((
        StatusCode::ACCEPTED,
        Json(mirror(state.ops.cleanup.start_run().await?)),
    ))
}

/// Past runs, one row per table, newest first, with their errors.
#[utoipa::path(get, path = "/data-cleanup/logs", tag = "data-cleanup",
    params(PageParams),
    responses((status = 200, body = Paged<CleanupLog>)))]
async fn logs(
    State(state): State<AppState>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<Paged<CleanupLog>>> {
    Ok(Json(state.ops.cleanup.logs(page.page()?).await?))
}

/// The tables a run is working on now: table, rows done, started.
#[utoipa::path(get, path = "/data-cleanup/progress", tag = "data-cleanup",
    responses((status = 200, body = Vec<CleanupLog>)))]
async fn progress(State(state): State<AppState>) -> ApiResult<Json<Vec<CleanupLog>>> {
    Ok(Json(state.ops.cleanup.progress().await?))
}
