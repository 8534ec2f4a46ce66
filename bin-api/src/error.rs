//! The one place where errors become HTTP answers: RFC 9457 `application/problem+json` with
//! `type`, `title`, `status`, `detail` and, for validation, `errors[]`.
//!
//! A 5xx is logged here with its cause (an [`AdminError`] with its whole chain of sources) and
//! answered with a generic text: internal messages never reach the client.

use crate::mirror::mirror;
use crate::view::FieldError;
use admin::AdminError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub(crate) const PROBLEM_JSON: &str = "application/problem+json";

/// An RFC 9457 problem document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"type": "/problems/validation", "title": "Unprocessable Content",
    "status": 422, "detail": "1 field is invalid",
    "errors": [{"pointer": "/name", "message": "must not be empty"}]}))]
pub(crate) struct Problem {
    /// A URI reference naming the kind of problem.
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) title: String,
    pub(crate) status: u16,
    pub(crate) detail: String,
    /// One entry per rejected field (validation problems only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) errors: Vec<FieldError>,
}

impl Problem {
    pub(crate) fn new(status: StatusCode, kind: &str, detail: impl Into<String>) -> Self {
        Problem {
            kind: format!("/problems/{kind}"),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            errors: Vec::new(),
        }
    }

    pub(crate) fn validation(errors: Vec<admin::FieldError>) -> Self {
        let errors: Vec<FieldError> = mirror(errors);
        let n = errors.len();
        let detail = match n {
            1 => "1 field is invalid".to_owned(),
            n => format!("{n} fields are invalid"),
        };
        Problem {
            errors,
            ..Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "validation", detail)
        }
    }

    /// The generic problem of a status code (unknown route, 405, timeout, ...).
    pub(crate) fn of_status(status: StatusCode) -> Self {
        let (kind, detail) = match status {
            StatusCode::NOT_FOUND => ("not-found", "no such resource or route"),
            StatusCode::METHOD_NOT_ALLOWED => (
                "method-not-allowed",
                "the route does not accept this method",
            ),
            StatusCode::PAYLOAD_TOO_LARGE => ("body-too-large", "the request body is too large"),
            StatusCode::REQUEST_TIMEOUT | StatusCode::SERVICE_UNAVAILABLE => (
                "unavailable",
                "the request did not complete in time; try again",
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                "unsupported-media-type",
                "send the body as application/json",
            ),
            s if s.is_server_error() => ("internal", "internal error"),
            _ => ("error", "the request was refused"),
        };
        Problem::new(status, kind, detail)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut response = (status, body).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        response
    }
}

/// Every error a handler can answer.
#[derive(Debug)]
pub(crate) enum ApiError {
    Admin(AdminError),
    Problem(Problem),
}

impl From<AdminError> for ApiError {
    fn from(e: AdminError) -> Self {
        ApiError::Admin(e)
    }
}

impl From<Problem> for ApiError {
    fn from(p: Problem) -> Self {
        ApiError::Problem(p)
    }
}

impl From<domain::StoreError> for ApiError {
    fn from(e: domain::StoreError) -> Self {
        ApiError::Admin(AdminError::Store(e))
    }
}

/// The answer of an internal failure: logged with its cause, answered generically.
pub(crate) fn internal(cause: &dyn std::fmt::Display) -> Problem {
    tracing::error!(error = %cause, "internal error answering a request");
    Problem::of_status(StatusCode::INTERNAL_SERVER_ERROR)
}

pub(crate) fn problem_of(e: AdminError) -> Problem {
    match e {
        AdminError::Invalid(errors) => Problem::validation(errors),
        AdminError::NotFound(what) => Problem::new(
            StatusCode::NOT_FOUND,
            "not-found",
            format!("{what} not found"),
        ),
        AdminError::Conflict { field } => {
            let mut p = Problem::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("{field} already exists"),
            );
            p.errors = mirror(vec![admin::FieldError::new(
                format!("/{field}"),
                "already exists",
            )]);
            p
        }
        AdminError::Busy(what) => Problem::new(
            StatusCode::CONFLICT,
            "busy",
            format!("{what} is being changed by another request; try again"),
        ),
        AdminError::Gateway(why) => {
            tracing::warn!(error = %admin::Chain(&why), "carrier gateway refused an operator action");
            Problem::new(
                StatusCode::BAD_GATEWAY,
                "gateway",
                "the carrier refused or did not answer; nothing was changed",
            )
        }
        AdminError::UnknownToCarrier(what) => Problem::new(
            StatusCode::CONFLICT,
            "unknown-to-carrier",
            format!("the carrier does not know {what}'s ICCID; nothing was changed"),
        ),
        AdminError::Store(domain::StoreError::Conflict { field, .. }) => {
            problem_of(AdminError::Conflict { field })
        }
        AdminError::Store(domain::StoreError::NotFound { entity, id }) => {
            problem_of(AdminError::NotFound(format!("{entity} {id}")))
        }
        other => internal(&admin::Chain(&other)),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::Admin(e) => problem_of(e).into_response(),
            ApiError::Problem(p) => p.into_response(),
        }
    }
}

pub(crate) type ApiResult<T> = Result<T, ApiError>;
