//! Concurrency (4): the cluster-wide semaphore per task type. A new max applies on every node
//! at its next acquire (one Redis key); every change is in the audit log (the guard).

use crate::body::{ResetConcurrency, SetConcurrency};
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath};
use crate::mirror::mirror;
use crate::state::AppState;
use crate::view::ConcurrencyView;
use admin::AdminError;
use axum::Json;
use axum::extract::State;
use domain::TaskType;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(get_one, set))
        .routes(routes!(reset))
}

fn task(name: &str) -> Result<TaskType, AdminError> {
    name.parse()
        .map_err(|_| AdminError::NotFound(format!("task type `{name}`")))
}

/// Current holders and max of every task type.
#[utoipa::path(get, path = "/polling-concurrency", tag = "concurrency",
    responses((status = 200, body = Vec<ConcurrencyView>)))]
async fn list(State(state): State<AppState>) -> ApiResult<Json<Vec<ConcurrencyView>>> {
    Ok(Json(mirror(state.ops.concurrency.list().await?)))
}

/// One task type's semaphore.
#[utoipa::path(get, path = "/polling-concurrency/{task_type}", tag = "concurrency",
    params(("task_type" = String, Path, description = "realname, carddata, package or protect")),
    responses((status = 200, body = ConcurrencyView)))]
async fn get_one(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<ConcurrencyView>> {
    Ok(Json(mirror(state.ops.concurrency.get(task(&name)?).await?)))
}

/// Set the max of a task type (1 to 100,000), for every node.
#[utoipa::path(put, path = "/polling-concurrency/{task_type}", tag = "concurrency",
    params(("task_type" = String, Path, description = "realname, carddata, package or protect")),
    request_body = SetConcurrency,
    responses((status = 200, body = ConcurrencyView)))]
async fn set(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<SetConcurrency>,
) -> ApiResult<Json<ConcurrencyView>> {
    Ok(Json(mirror(
        state
            .ops
            .concurrency
            .set(task(&name)?, mirror(body))
            .await?,
    )))
}

/// Forget the holders (slots left by crashed nodes) of some or all types; `clear_max` also
/// puts the max back to the default.
#[utoipa::path(post, path = "/polling-concurrency/reset", tag = "concurrency",
    request_body = ResetConcurrency,
    responses((status = 200, body = Vec<ConcurrencyView>)))]
async fn reset(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ResetConcurrency>,
) -> ApiResult<Json<Vec<ConcurrencyView>>> {
    Ok(Json(mirror(
        state.ops.concurrency.reset(&mirror(body)).await?,
    )))
}
