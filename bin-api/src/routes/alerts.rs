//! Alert rules (6): CRUD and the history. The evaluator runs in the worker.

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::mirror::mirror;
use crate::pagination::PageParams;
use crate::state::AppState;
use crate::view::CreatedRule;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use domain::store::Paged;
use domain::{AlertHistory, AlertRule, AlertRuleId, AlertRuleInput};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(history))
}

/// List alert rules.
#[utoipa::path(get, path = "/polling-alert-rules", tag = "alerts",
    params(PageParams),
    responses((status = 200, body = Paged<AlertRule>)))]
async fn list(
    State(state): State<AppState>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<Paged<AlertRule>>> {
    Ok(Json(state.ops.alerts.list(page.page()?).await?))
}

/// Create a rule. The answer carries the webhook secret (generated when none was given): the
/// only answer that shows it. Webhooks are signed `x-cmp-signature: sha256=<hex HMAC-SHA256>`.
#[utoipa::path(post, path = "/polling-alert-rules", tag = "alerts",
    request_body = AlertRuleInput,
    responses((status = 201, body = CreatedRule)))]
async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<AlertRuleInput>,
) -> ApiResult<(StatusCode, Json<CreatedRule>)> {
    Ok((
        StatusCode::CREATED,
        Json(mirror(state.ops.alerts.create(body).await?)),
    ))
}

/// One rule.
#[utoipa::path(get, path = "/polling-alert-rules/{id}", tag = "alerts",
    params(("id" = i64, Path, description = "rule id")),
    responses((status = 200, body = AlertRule)))]
async fn get_one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<AlertRule>> {
    Ok(Json(state.ops.alerts.get(AlertRuleId(id)).await?))
}

/// Replace a rule; an absent `webhook_secret` keeps the current one.
#[utoipa::path(put, path = "/polling-alert-rules/{id}", tag = "alerts",
    params(("id" = i64, Path, description = "rule id")),
    request_body = AlertRuleInput,
    responses((status = 200, body = AlertRule)))]
async fn update(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<AlertRuleInput>,
) -> ApiResult<Json<AlertRule>> {
    Ok(Json(state.ops.alerts.update(AlertRuleId(id), body).await?))
}

/// Delete a rule (and its history).
#[utoipa::path(delete, path = "/polling-alert-rules/{id}", tag = "alerts",
    params(("id" = i64, Path, description = "rule id")),
    responses((status = 204, description = "Deleted")))]
async fn delete(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<StatusCode> {
    state.ops.alerts.delete(AlertRuleId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct HistoryQuery {
    /// Only this rule's firings.
    rule_id: Option<i64>,
    page: Option<u32>,
    page_size: Option<u32>,
}

/// Firings, newest first: value, fired and resolved times, whether the webhooks arrived.
#[utoipa::path(get, path = "/polling-alert-history", tag = "alerts",
    params(HistoryQuery),
    responses((status = 200, body = Paged<AlertHistory>)))]
async fn history(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<HistoryQuery>,
) -> ApiResult<Json<Paged<AlertHistory>>> {
    let page = PageParams {
        page: q.page,
        page_size: q.page_size,
    }
    .page()?;
    Ok(Json(
        state
            .ops
            .alerts
            .history(q.rule_id.map(AlertRuleId), page)
            .await?,
    ))
}
