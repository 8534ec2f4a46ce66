//! Cards: create, import, list, get, delete, status, operator stop/start, state log, explain,
//! the month's usage.

use crate::body::{CardBody, CardStatusBody, ImportBody};
use crate::error::internal;
use crate::error::{ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::mirror::Mirror;
use crate::mirror::mirror;
use crate::pagination::PageParams;
use crate::state::AppState;
use crate::view::{CardAction, Explanation, ImportJob, ImportMode, ImportReport, MonthUsage};
use admin::AdminError;
use admin::{FieldError, iccid_prefix_problem, msisdn_problem};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use domain::store::Paged;
use domain::{
    Card, CardCategory, CardId, CardQuery, CardStateLog, CarrierId, DeviceId, NetworkStatus,
    RealNameStatus, StopReason,
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(import))
        .routes(routes!(import_job))
        .routes(routes!(get_one, delete))
        .routes(routes!(set_status))
        .routes(routes!(stop))
        .routes(routes!(start))
        .routes(routes!(state_log))
        .routes(routes!(explain))
        .routes(routes!(usage))
}

/// The operators' card filters; every one given must hold.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CardListQuery {
    /// ICCID prefix: 1 to 22 letters or digits.
    #[param(example = "8986", pattern = "^[A-Za-z0-9]{1,22}$", max_length = 22)]
    iccid: Option<String>,
    /// The whole MSISDN: an optional `+` and 1 to 20 digits.
    #[param(pattern = "^\\+?[0-9]{1,20}$", max_length = 21)]
    msisdn: Option<String>,
    #[param(minimum = 1)]
    device_id: Option<i64>,
    #[param(minimum = 1)]
    carrier_id: Option<i64>,
    /// Platform status code.
    #[param(minimum = -32768, maximum = 32767)]
    status: Option<i16>,
    network_status: Option<NetworkStatus>,
    stop_reason: Option<StopReason>,
    card_category: Option<CardCategory>,
    real_name_status: Option<RealNameStatus>,
    enable_polling: Option<bool>,
}

impl CardListQuery {
    /// The filters, each checked (a 422 names every bad parameter).
    fn query(self) -> Result<CardQuery, Problem> {
        let iccid = self.iccid.filter(|s| !s.is_empty());
        let msisdn = self.msisdn.filter(|s| !s.is_empty());
        let mut errors = Vec::new();
        if let Some(problem) = iccid.as_deref().and_then(iccid_prefix_problem) {
            errors.push(FieldError::new("/iccid", problem));
        }
        if let Some(problem) = msisdn.as_deref().and_then(msisdn_problem) {
            errors.push(FieldError::new("/msisdn", problem));
        }
        for (pointer, id) in [
            ("/device_id", self.device_id),
            ("/carrier_id", self.carrier_id),
        ] {
            if id.is_some_and(|v| v <= 0) {
                errors.push(FieldError::new(pointer, "must be a positive id"));
            }
        }
        if !errors.is_empty() {
            return Err(Problem::validation(errors));
        }
        Ok(CardQuery {
            iccid_prefix: iccid,
            msisdn,
            device_id: self.device_id.map(DeviceId),
            carrier_id: self.carrier_id.map(CarrierId),
            status: self.status,
            network_status: self.network_status,
            stop_reason: self.stop_reason,
            card_category: self.card_category,
            real_name_status: self.real_name_status,
            enable_polling: self.enable_polling,
        })
    }
}

/// List live cards.
#[utoipa::path(get, path = "/cards", tag = "assets",
    params(PageParams, CardListQuery), responses((status = 200, body = Paged<Card>)))]
async fn list(
    State(state): State<AppState>,
    ApiQuery(page): ApiQuery<PageParams>,
    ApiQuery(filter): ApiQuery<CardListQuery>,
) -> ApiResult<Json<Paged<Card>>> {
    Ok(Json(
        state
            .admin
            .list_cards(&filter.query()?, page.page()?)
            .await?,
    ))
}

/// Create one card; it is queued as its config schedules.
#[utoipa::path(post, path = "/cards", tag = "assets",
    request_body = CardBody, responses((status = 201, body = Card)))]
async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CardBody>,
) -> ApiResult<(StatusCode, Json<Card>)> {
    Ok((
        StatusCode::CREATED,
        Json(state.admin.create_card(&mirror(body)).await?),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ImportQuery {
    /// `all-or-nothing` (the default) or `partial`.
    mode: Option<ImportMode>,
    /// `true`: answer `202` with a job at once and import in the background; follow it at
    /// `GET /cards/import/{job_id}`.
    background: Option<bool>,
}

/// Import up to 100,000 cards. `mode=all-or-nothing` (the default): any bad row refuses the
/// import (422), with one error per field pointing at the row (`/cards/17/iccid`), and nothing
/// is written. `mode=partial`: the good rows are imported and each bad row is reported in
/// `rejected` with its line and errors; an import with no good row is refused (422). With
/// `background=true` the answer is `202` and a job whose progress, report or problem
/// `GET /cards/import/{job_id}` shows.
#[utoipa::path(post, path = "/cards/import", tag = "assets", params(ImportQuery),
    request_body = ImportBody, responses((status = 201, body = ImportReport),
        (status = 202, body = ImportJob, description = "Started in the background")))]
async fn import(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ImportQuery>,
    ApiJson(body): ApiJson<ImportBody>,
) -> ApiResult<Response> {
    let mode: admin::ImportMode = q.mode.map(mirror).unwrap_or_default();
    let body: admin::ImportBody = mirror(body);
    if q.background.unwrap_or(false) {
        // The size is checked now: a job is only started for a file that may be imported.
        if body.cards.is_empty() || body.cards.len() > admin::MAX_IMPORT {
            return Err(AdminError::invalid(
                "/cards",
                format!("must hold 1 to {} cards", admin::MAX_IMPORT),
            )
            .into());
        }
        let job = state
            .imports
            .start(state.admin.clone(), body, mode)
            .await
            .map_err(|e| internal(&e))?;
        let location = format!("/api/admin/cards/import/{}", job.id);
        let mut r = (StatusCode::ACCEPTED, Json(ImportJob::mirror(job))).into_response();
        if let Ok(v) = HeaderValue::from_str(&location) {
            r.headers_mut().insert(header::LOCATION, v);
        }
        return Ok(r);
    }
    let report = state.admin.import_cards(&body, mode).await?;
    Ok((StatusCode::CREATED, Json(ImportReport::mirror(report))).into_response())
}

/// A background import: its state, progress and, once over, its report or problem (`404`
/// when unknown or older than 24 h).
#[utoipa::path(get, path = "/cards/import/{job_id}", tag = "assets",
    params(("job_id" = String, Path, description = "the job id `POST /cards/import?background=true` answered")),
    responses((status = 200, body = ImportJob)))]
async fn import_job(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ImportJob>> {
    let job = state.imports.find(&id).await.map_err(|e| internal(&e))?;
    match job {
        Some(job) => Ok(Json(ImportJob::mirror(job))),
        None => Err(AdminError::NotFound(format!("import {id}")).into()),
    }
}

/// One card.
#[utoipa::path(get, path = "/cards/{id}", tag = "assets",
    params(("id" = i64, Path, description = "card id")), responses((status = 200, body = Card)))]
async fn get_one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<Card>> {
    Ok(Json(state.admin.get_card(CardId(id)).await?))
}

/// Delete a card: out of every queue (protect included) and the card cache.
#[utoipa::path(delete, path = "/cards/{id}", tag = "assets",
    params(("id" = i64, Path, description = "card id")),
    responses((status = 204, description = "Deleted")))]
async fn delete(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<StatusCode> {
    state.admin.delete_card(CardId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Set the card's platform status code; the card is rescheduled.
#[utoipa::path(patch, path = "/cards/{id}/status", tag = "assets",
    params(("id" = i64, Path, description = "card id")),
    request_body = CardStatusBody, responses((status = 200, body = Card)))]
async fn set_status(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<CardStatusBody>,
) -> ApiResult<Json<Card>> {
    Ok(Json(
        state.admin.set_card_status(CardId(id), body.status).await?,
    ))
}

/// An operator's stop (`stop_reason = manual`): automation never resumes it.
#[utoipa::path(post, path = "/cards/{id}/stop", tag = "assets",
    params(("id" = i64, Path, description = "card id")),
    responses((status = 200, body = CardAction)))]
async fn stop(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<CardAction>> {
    Ok(Json(mirror(state.admin.stop_card(CardId(id)).await?)))
}

/// An operator's start, whatever the reason the card was stopped for.
#[utoipa::path(post, path = "/cards/{id}/start", tag = "assets",
    params(("id" = i64, Path, description = "card id")),
    responses((status = 200, body = CardAction)))]
async fn start(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<CardAction>> {
    Ok(Json(mirror(state.admin.start_card(CardId(id)).await?)))
}

/// The card's stops, starts and reason changes, newest first.
#[utoipa::path(get, path = "/cards/{id}/state-log", tag = "assets",
    params(("id" = i64, Path, description = "card id"), PageParams),
    responses((status = 200, body = Paged<CardStateLog>)))]
async fn state_log(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<Paged<CardStateLog>>> {
    Ok(Json(
        state.admin.card_state_log(CardId(id), page.page()?).await?,
    ))
}

/// Why the card is where it is, and what would change it.
#[utoipa::path(get, path = "/cards/{id}/explain", tag = "operators",
    params(("id" = i64, Path, description = "card id")),
    responses((status = 200, body = Explanation)))]
async fn explain(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<Explanation>> {
    Ok(Json(mirror(state.admin.explain(CardId(id)).await?)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct UsageQuery {
    /// `YYYY-MM` of the deployment's calendar (`CMP_TIMEZONE`), 1970-01 to 9998-12; default: the
    /// current month.
    #[param(
        example = "2026-12",
        pattern = "^(19[7-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-(0[1-9]|1[0-2])$"
    )]
    month: Option<String>,
}

/// The card's usage over a month by hour (`tb_data_usage_record`; at most 745 rows), for a
/// chart against its packages' limits (the dashboard's card page).
#[utoipa::path(get, path = "/cards/{id}/usage", tag = "operators",
    params(("id" = i64, Path, description = "card id"), UsageQuery),
    responses((status = 200, body = MonthUsage)))]
async fn usage(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(q): ApiQuery<UsageQuery>,
) -> ApiResult<Json<MonthUsage>> {
    Ok(Json(mirror(
        state
            .admin
            .month_usage(CardId(id), q.month.as_deref())
            .await?,
    )))
}
