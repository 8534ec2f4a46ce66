//! Manual trigger (6).

use crate::auth::Caller;
use crate::body::{TriggerBatch, TriggerByFilter, TriggerCancel, TriggerSingle};
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery};
use crate::mirror::mirror;
use crate::pagination::PageParams;
use crate::state::AppState;
use crate::view::{CancelReport, ManualListLen, TriggerReport};
use axum::extract::State;
use axum::{Extension, Json};
use domain::ManualTriggerLog;
use domain::store::Paged;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(single))
        .routes(routes!(batch))
        .routes(routes!(by_filter))
        .routes(routes!(logs))
        .routes(routes!(status))
        .routes(routes!(cancel))
}

/// Poll one card now (each given task type, default all four).
#[utoipa::path(post, path = "/polling-manual-trigger/single", tag = "manual-trigger",
    request_body = TriggerSingle, responses((status = 200, body = TriggerReport)))]
async fn single(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<TriggerSingle>,
) -> ApiResult<Json<TriggerReport>> {
    Ok(Json(mirror(
        state
            .admin
            .trigger_single(&caller.name, &mirror(body))
            .await?,
    )))
}

/// Poll up to 10,000 cards now; unknown ids are skipped and listed.
#[utoipa::path(post, path = "/polling-manual-trigger/batch", tag = "manual-trigger",
    request_body = TriggerBatch, responses((status = 200, body = TriggerReport)))]
async fn batch(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<TriggerBatch>,
) -> ApiResult<Json<TriggerReport>> {
    Ok(Json(mirror(
        state
            .admin
            .trigger_batch(&caller.name, &mirror(body))
            .await?,
    )))
}

/// Poll every card matching a filter now (at most 100,000 a call).
#[utoipa::path(post, path = "/polling-manual-trigger/by-filter", tag = "manual-trigger",
    request_body = TriggerByFilter, responses((status = 200, body = TriggerReport)))]
async fn by_filter(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<TriggerByFilter>,
) -> ApiResult<Json<TriggerReport>> {
    Ok(Json(mirror(
        state
            .admin
            .trigger_by_filter(&caller.name, &mirror(body))
            .await?,
    )))
}

/// The manual trigger log, newest first.
#[utoipa::path(get, path = "/polling-manual-trigger/logs", tag = "manual-trigger",
    params(PageParams), responses((status = 200, body = Paged<ManualTriggerLog>)))]
async fn logs(
    State(state): State<AppState>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<Paged<ManualTriggerLog>>> {
    Ok(Json(state.admin.trigger_logs(page.page()?).await?))
}

/// Cards waiting on each manual list.
#[utoipa::path(get, path = "/polling-manual-trigger/status", tag = "manual-trigger",
    responses((status = 200, body = Vec<ManualListLen>)))]
async fn status(State(state): State<AppState>) -> ApiResult<Json<Vec<ManualListLen>>> {
    Ok(Json(mirror(state.admin.manual_status().await?)))
}

/// Empty a type's manual list (or every type's).
#[utoipa::path(post, path = "/polling-manual-trigger/cancel", tag = "manual-trigger",
    request_body = TriggerCancel, responses((status = 200, body = CancelReport)))]
async fn cancel(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<TriggerCancel>,
) -> ApiResult<Json<CancelReport>> {
    Ok(Json(mirror(
        state.admin.cancel_manual(&mirror(body)).await?,
    )))
}
