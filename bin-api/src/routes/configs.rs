//! Polling configs (7 routes, plus the dry run).

use crate::body::{ConfigBody, DryRunBody};
use crate::error::{ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::mirror::mirror;
use crate::pagination::PageParams;
use crate::state::AppState;
use crate::view::{ConfigMatch, DryRun};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use domain::store::Paged;
use domain::{CardId, PollingConfig, PollingConfigId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(set_status))
        .routes(routes!(match_card))
        .routes(routes!(dry_run))
}

/// `PATCH /polling-configs/{id}/status`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
pub(crate) struct StatusBody {
    pub(crate) enabled: bool,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct MatchQuery {
    /// The card to match.
    card_id: i64,
}

/// List polling configs, in matching order (ascending priority, then id).
#[utoipa::path(get, path = "/polling-configs", tag = "polling-configs",
    params(PageParams),
    responses((status = 200, body = Paged<PollingConfig>)))]
async fn list(
    State(state): State<AppState>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<Paged<PollingConfig>>> {
    Ok(Json(state.admin.list_configs(page.page()?).await?))
}

/// Create a polling config; every process sees it within a second.
#[utoipa::path(post, path = "/polling-configs", tag = "polling-configs",
    request_body = ConfigBody,
    responses((status = 201, body = PollingConfig)))]
async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ConfigBody>,
) -> ApiResult<(StatusCode, Json<PollingConfig>)> {
    Ok((
        StatusCode::CREATED,
        Json(state.admin.create_config(&mirror(body)).await?),
    ))
}

/// One polling config.
#[utoipa::path(get, path = "/polling-configs/{id}", tag = "polling-configs",
    params(("id" = i64, Path, description = "config id")),
    responses((status = 200, body = PollingConfig)))]
async fn get_one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<PollingConfig>> {
    Ok(Json(state.admin.get_config(PollingConfigId(id)).await?))
}

/// Replace a polling config.
#[utoipa::path(put, path = "/polling-configs/{id}", tag = "polling-configs",
    params(("id" = i64, Path, description = "config id")),
    request_body = ConfigBody,
    responses((status = 200, body = PollingConfig)))]
async fn update(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<ConfigBody>,
) -> ApiResult<Json<PollingConfig>> {
    Ok(Json(
        state
            .admin
            .update_config(PollingConfigId(id), &mirror(body))
            .await?,
    ))
}

/// Delete a polling config.
#[utoipa::path(delete, path = "/polling-configs/{id}", tag = "polling-configs",
    params(("id" = i64, Path, description = "config id")),
    responses((status = 204, description = "Deleted")))]
async fn delete(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<StatusCode> {
    state.admin.delete_config(PollingConfigId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Enable or disable a polling config.
#[utoipa::path(patch, path = "/polling-configs/{id}/status", tag = "polling-configs",
    params(("id" = i64, Path, description = "config id")),
    request_body = StatusBody,
    responses((status = 200, body = PollingConfig)))]
async fn set_status(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<StatusBody>,
) -> ApiResult<Json<PollingConfig>> {
    Ok(Json(
        state
            .admin
            .set_config_enabled(PollingConfigId(id), body.enabled)
            .await?,
    ))
}

/// Which config a card matches, and why (every candidate's conditions).
#[utoipa::path(get, path = "/polling-configs/match", tag = "polling-configs",
    params(MatchQuery),
    responses((status = 200, body = ConfigMatch),
        (status = 404, description = "No such card", body = Problem, content_type = "application/problem+json")))]
async fn match_card(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<MatchQuery>,
) -> ApiResult<Json<ConfigMatch>> {
    Ok(Json(mirror(
        state.admin.match_card(CardId(q.card_id)).await?,
    )))
}

/// How many polled cards a config would match, and change interval or queues for.
#[utoipa::path(post, path = "/polling-configs/dry-run", tag = "polling-configs",
    request_body = DryRunBody,
    responses((status = 200, body = DryRun)))]
async fn dry_run(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<DryRunBody>,
) -> ApiResult<Json<DryRun>> {
    Ok(Json(mirror(
        state.admin.dry_run_config(&mirror(body)).await?,
    )))
}
