//! Asset polling control (1), packages, package usages.

use crate::body::{PackageBody, PackageUsageBody, PollingStatusBody};
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath};
use crate::mirror::mirror;
use crate::state::AppState;
use crate::view::{AssetType, PackageUsageOutcome, PollingStatusReport};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use domain::Package;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(polling_status))
        .routes(routes!(create_package))
        .routes(routes!(create_usage))
}

/// Switch polling of a card, or of every card of a device, on or off.
#[utoipa::path(patch, path = "/assets/{asset_type}/{id}/polling-status", tag = "assets",
    params(("asset_type" = AssetType, Path, description = "`card` or `device`"),
        ("id" = i64, Path, description = "card or device id")),
    request_body = PollingStatusBody, responses((status = 200, body = PollingStatusReport)))]
async fn polling_status(
    State(state): State<AppState>,
    ApiPath((asset_type, id)): ApiPath<(AssetType, i64)>,
    ApiJson(body): ApiJson<PollingStatusBody>,
) -> ApiResult<Json<PollingStatusReport>> {
    Ok(Json(mirror(
        state
            .admin
            .set_polling_status(mirror(asset_type), id, body.enable_polling)
            .await?,
    )))
}

/// Create a package product.
#[utoipa::path(post, path = "/packages", tag = "assets",
    request_body = PackageBody, responses((status = 201, body = Package)))]
async fn create_package(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<PackageBody>,
) -> ApiResult<(StatusCode, Json<Package>)> {
    Ok((
        StatusCode::CREATED,
        Json(state.admin.create_package(&mirror(body)).await?),
    ))
}

/// Sell a package to a card or a device; activated at once when the owner has no valid
/// package, and every covered card re-evaluated.
#[utoipa::path(post, path = "/package-usages", tag = "assets",
    request_body = PackageUsageBody, responses((status = 201, body = PackageUsageOutcome)))]
async fn create_usage(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<PackageUsageBody>,
) -> ApiResult<(StatusCode, Json<PackageUsageOutcome>)> {
    Ok((
        StatusCode::CREATED,
        Json(mirror(
            state.admin.create_package_usage(&mirror(body)).await?,
        )),
    ))
}
