//! Devices: create, get, delete, bind/unbind, stop/start with protect periods.

use crate::body::{BindBody, DeviceBody};
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath};
use crate::mirror::mirror;
use crate::state::AppState;
use crate::view::{BindOutcome, DeviceSwitchReport, DeviceView};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use domain::{CardId, Device, DeviceId, NetworkStatus};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(get_one, delete))
        .routes(routes!(bind))
        .routes(routes!(unbind))
        .routes(routes!(stop))
        .routes(routes!(start))
}

/// Create a device.
#[utoipa::path(post, path = "/devices", tag = "assets",
    request_body = DeviceBody, responses((status = 201, body = Device)))]
async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<DeviceBody>,
) -> ApiResult<(StatusCode, Json<Device>)> {
    Ok((
        StatusCode::CREATED,
        Json(state.admin.create_device(&mirror(body)).await?),
    ))
}

/// A device and its cards.
#[utoipa::path(get, path = "/devices/{id}", tag = "assets",
    params(("id" = i64, Path, description = "device id")),
    responses((status = 200, body = DeviceView)))]
async fn get_one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<DeviceView>> {
    Ok(Json(mirror(state.admin.get_device(DeviceId(id)).await?)))
}

/// Delete a device; its cards become standalone.
#[utoipa::path(delete, path = "/devices/{id}", tag = "assets",
    params(("id" = i64, Path, description = "device id")),
    responses((status = 204, description = "Deleted")))]
async fn delete(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<StatusCode> {
    state.admin.delete_device(DeviceId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Bind a card to the device; it is re-evaluated against the device's packages.
#[utoipa::path(post, path = "/devices/{id}/cards", tag = "assets",
    params(("id" = i64, Path, description = "device id")),
    request_body = BindBody, responses((status = 200, body = BindOutcome)))]
async fn bind(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<BindBody>,
) -> ApiResult<Json<BindOutcome>> {
    Ok(Json(mirror(
        state.admin.bind_card(DeviceId(id), body.card_id).await?,
    )))
}

/// Unbind a card; it is re-evaluated against its own packages.
#[utoipa::path(delete, path = "/devices/{id}/cards/{card_id}", tag = "assets",
    params(("id" = i64, Path, description = "device id"), ("card_id" = i64, Path, description = "card id")),
    responses((status = 200, body = BindOutcome)))]
async fn unbind(
    State(state): State<AppState>,
    ApiPath((id, card_id)): ApiPath<(i64, i64)>,
) -> ApiResult<Json<BindOutcome>> {
    Ok(Json(mirror(
        state
            .admin
            .unbind_card(DeviceId(id), CardId(card_id))
            .await?,
    )))
}

/// Stop every card of the device at the carrier and start a stop protect period
/// (`CMP_PROTECT_PERIOD_SECS`).
#[utoipa::path(post, path = "/devices/{id}/stop", tag = "assets",
    params(("id" = i64, Path, description = "device id")),
    responses((status = 200, body = DeviceSwitchReport)))]
async fn stop(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<DeviceSwitchReport>> {
    switch(&state, id, NetworkStatus::Stopped).await
}

/// Start every card of the device at the carrier and start a start protect period.
#[utoipa::path(post, path = "/devices/{id}/start", tag = "assets",
    params(("id" = i64, Path, description = "device id")),
    responses((status = 200, body = DeviceSwitchReport)))]
async fn start(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<DeviceSwitchReport>> {
    switch(&state, id, NetworkStatus::Online).await
}

/// `stop` and `start`: every card of the device to `to`.
async fn switch(
    state: &AppState,
    id: i64,
    to: NetworkStatus,
) -> ApiResult<Json<DeviceSwitchReport>> {
    Ok(Json(mirror(
        state.admin.switch_device(DeviceId(id), to).await?,
    )))
}
