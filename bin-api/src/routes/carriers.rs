//! Carriers (6): carriers as configuration (`tb_carrier`), their health as the workers publish
//! it, a connection test, and each carrier's call budget against its cards' demand. Credentials are write-only: no answer carries a value, and the
//! audit row of a write names the credential fields only (`crate::audit`).

use crate::body::{CarrierBody, CarrierStatusBody, NewCarrierBody};
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::mirror::mirror;
use crate::pagination::PageParams;
use crate::state::AppState;
use crate::view::{CarrierView, ConnectionTest};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use domain::store::Paged;
use domain::{BudgetReport, CarrierId};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(budget))
        .routes(routes!(get_one, update))
        .routes(routes!(set_status))
        .routes(routes!(test_connection))
}

/// List carriers, by id, each with its health (`null` before a worker published any).
#[utoipa::path(get, path = "/carriers", tag = "carriers",
    params(PageParams),
    responses((status = 200, body = Paged<CarrierView>)))]
async fn list(
    State(state): State<AppState>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<Paged<CarrierView>>> {
    Ok(Json(mirror(state.ops.carriers.list(page.page()?).await?)))
}

/// Every carrier's call budget against what its cards ask, as the worker's
/// `carrier_budget` job last computed it (every minute; this route reads its figures and scans
/// nothing): calls/s allowed (`null`: no limit) and used by every node over the last
/// `used_window_secs`, cards per call, the demand in calls/s, and per task type and configured
/// interval the cards scheduled and the round time achievable at the budget:
/// `demand = Σ cards / (interval × cards_per_call)`, `round_ratio = max(1, demand / allowed)`,
/// `round_secs = interval × round_ratio`; `over` when the round exceeds the interval. Protect
/// polls make no query and are not counted. `computed_at` is `null` (and `carriers` empty)
/// when no worker computed the figures in the last 10 minutes.
#[utoipa::path(get, path = "/carriers/budget", tag = "carriers",
    responses((status = 200, body = BudgetReport)))]
async fn budget(State(state): State<AppState>) -> ApiResult<Json<BudgetReport>> {
    Ok(Json(state.ops.budget.report().await?))
}

/// Create a carrier (admin). `credentials` are required (`{}` for `cmp-json`) and never
/// returned; absent `limits` fields take the protocol's defaults. 409 when the id is taken.
#[utoipa::path(post, path = "/carriers", tag = "carriers",
    request_body = NewCarrierBody,
    responses((status = 201, body = CarrierView)))]
async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<NewCarrierBody>,
) -> ApiResult<(StatusCode, Json<CarrierView>)> {
    Ok((
        StatusCode::CREATED,
        Json(mirror(state.ops.carriers.create(mirror(body)).await?)),
    ))
}

/// One carrier, with its health.
#[utoipa::path(get, path = "/carriers/{carrier_id}", tag = "carriers",
    params(("carrier_id" = i64, Path, description = "carrier id")),
    responses((status = 200, body = CarrierView)))]
async fn get_one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<CarrierView>> {
    Ok(Json(mirror(state.ops.carriers.get(CarrierId(id)).await?)))
}

/// Replace a carrier (admin). Absent `credentials` keep the stored ones; a credential field
/// sent as `""` keeps that field's stored value.
#[utoipa::path(put, path = "/carriers/{carrier_id}", tag = "carriers",
    params(("carrier_id" = i64, Path, description = "carrier id")),
    request_body = CarrierBody,
    responses((status = 200, body = CarrierView)))]
async fn update(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<CarrierBody>,
) -> ApiResult<Json<CarrierView>> {
    Ok(Json(mirror(
        state
            .ops
            .carriers
            .update(CarrierId(id), mirror(body))
            .await?,
    )))
}

/// Enable or disable a carrier (admin). A disabled carrier is never called: its cards' polls
/// fail as `carrier disabled` and are retried.
#[utoipa::path(patch, path = "/carriers/{carrier_id}/status", tag = "carriers",
    params(("carrier_id" = i64, Path, description = "carrier id")),
    request_body = CarrierStatusBody,
    responses((status = 200, body = CarrierView)))]
async fn set_status(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<CarrierStatusBody>,
) -> ApiResult<Json<CarrierView>> {
    Ok(Json(mirror(
        state
            .ops
            .carriers
            .set_enabled(CarrierId(id), body.enabled)
            .await?,
    )))
}

/// Test the connection (admin): one harmless authenticated call to the carrier's platform with
/// the stored credentials, disabled carriers included, within twice the carrier's timeout (at
/// most 8 s). Always 200 when the carrier exists: `ok` and `outcome` say how it went.
#[utoipa::path(post, path = "/carriers/{carrier_id}/test", tag = "carriers",
    params(("carrier_id" = i64, Path, description = "carrier id")),
    responses((status = 200, body = ConnectionTest)))]
async fn test_connection(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<ConnectionTest>> {
    Ok(Json(mirror(
        state.ops.carriers.test_connection(CarrierId(id)).await?,
    )))
}
