//! Monitoring (4 routes) and, beyond them, the metrics history the dashboard charts. Each
//! answer costs O(shards) Redis calls and no scan of the card table.

use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::mirror::mirror;
use crate::state::AppState;
use crate::view::{HistoryRange, InitProgressView, PollingStats, Series, TaskQueues, TaskRunStats};
use admin::AdminError;
use axum::Json;
use axum::extract::State;
use domain::{HistoryScope, TaskType};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(stats))
        .routes(routes!(queues))
        .routes(routes!(tasks))
        .routes(routes!(init_progress))
        .routes(routes!(history))
}

/// The overview: cards (estimates on a large table; `cards.source` says), and per task type
/// the total depth, due backlog, oldest due age, polls per minute, failure rate; the
/// initializer. An unreadable shard is skipped, named in `missing_shards` and `warnings`.
#[utoipa::path(get, path = "/polling-stats", tag = "monitoring",
    responses((status = 200, body = PollingStats)))]
async fn stats(State(state): State<AppState>) -> ApiResult<Json<PollingStats>> {
    Ok(Json(mirror(state.ops.monitoring.polling_stats().await?)))
}

/// Depth, due cards and oldest due age per task type per shard.
#[utoipa::path(get, path = "/polling-stats/queues", tag = "monitoring",
    responses((status = 200, body = Vec<TaskQueues>)))]
async fn queues(State(state): State<AppState>) -> ApiResult<Json<Vec<TaskQueues>>> {
    Ok(Json(mirror(state.ops.monitoring.queues().await)))
}

/// Success, failure, requeued, mean and p95 duration per task type.
#[utoipa::path(get, path = "/polling-stats/tasks", tag = "monitoring",
    responses((status = 200, body = Vec<TaskRunStats>)))]
async fn tasks(State(state): State<AppState>) -> ApiResult<Json<Vec<TaskRunStats>>> {
    Ok(Json(mirror(state.ops.monitoring.tasks().await?)))
}

/// The initializer's progress (`polling:init:progress`).
#[utoipa::path(get, path = "/polling-stats/init-progress", tag = "monitoring",
    responses((status = 200, body = InitProgressView)))]
async fn init_progress(State(state): State<AppState>) -> ApiResult<Json<InitProgressView>> {
    Ok(Json(mirror(state.ops.monitoring.init_progress().await?)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct HistoryQuery {
    /// A task type, or `all` for the fleet row (stops by reason, gateway outcomes).
    scope: String,
    /// `1h`, `24h` (minute points), `30d` (hourly), `13mo` (daily).
    range: HistoryRange,
}

/// A series of the metrics history (the dashboard's charts).
#[utoipa::path(get, path = "/polling-stats/history", tag = "monitoring",
    params(HistoryQuery),
    responses((status = 200, body = Series)))]
async fn history(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<HistoryQuery>,
) -> ApiResult<Json<Series>> {
    let scope = if q.scope == "all" {
        HistoryScope::All
    } else {
        HistoryScope::Task(
            q.scope
                .parse::<TaskType>()
                .map_err(|_| AdminError::invalid("/scope", "must be a task type or `all`"))?,
        )
    };
    Ok(Json(mirror(
        state.ops.history.series(scope, mirror(q.range)).await?,
    )))
}
