//! axum's extractors with their rejections turned into problem+json: malformed JSON is a 400,
//! a well-formed body with a bad value a 422 naming the field, a bad path or query value 422.

use crate::error::{ApiError, Problem};
use admin::FieldError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// `axum::Json` with problem+json rejections.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ApiJson<T>(pub(crate) T);

/// `axum::extract::Path` with problem+json rejections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApiPath<T>(pub(crate) T);

/// `axum::extract::Query` with problem+json rejections.
#[derive(Debug, Clone, Default)]
pub(crate) struct ApiQuery<T>(pub(crate) T);

/// `"a.b[2].c: message"` → (`/a/b/2/c`, `message`), when serde named a path.
fn split_path(text: &str) -> (String, String) {
    if let Some((path, message)) = text.split_once(": ")
        && !path.is_empty()
        && !path.contains(' ')
    {
        let pointer: String = path
            .replace('[', ".")
            .replace(']', "")
            .split('.')
            .filter(|s| !s.is_empty())
            .map(|s| format!("/{s}"))
            .collect();
        if !pointer.is_empty() {
            return (pointer, message.to_owned());
        }
    }
    (String::new(), text.to_owned())
}

fn invalid(pointer_prefix: &str, text: &str) -> ApiError {
    let (pointer, message) = split_path(text);
    let pointer = if pointer.is_empty() {
        pointer_prefix.to_owned()
    } else {
        pointer
    };
    Problem::validation(vec![FieldError::new(pointer, message)]).into()
}

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(JsonRejection::JsonDataError(e)) => {
                let text = e.body_text();
                let text = text
                    .strip_prefix("Failed to deserialize the JSON body into the target type: ")
                    .unwrap_or(&text);
                Err(invalid("", text))
            }
            Err(JsonRejection::JsonSyntaxError(e)) => Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "malformed-json",
                format!(
                    "the body is not valid JSON: {}",
                    e.body_text().rsplit(": ").next().unwrap_or("")
                ),
            )
            .into()),
            Err(JsonRejection::MissingJsonContentType(_)) => {
                Err(Problem::of_status(StatusCode::UNSUPPORTED_MEDIA_TYPE).into())
            }
            Err(other) => {
                let status = other.status();
                if status == StatusCode::PAYLOAD_TOO_LARGE {
                    return Err(Problem::of_status(status).into());
                }
                Err(Problem::new(StatusCode::BAD_REQUEST, "bad-request", other.body_text()).into())
            }
        }
    }
}

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(ApiPath(v)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => {
                Err(Problem::validation(vec![FieldError::new(
                    "",
                    format!("path parameter: {}", e.body_text()),
                )])
                .into())
            }
            Err(other) => Err(crate::error::internal(&other).into()),
        }
    }
}

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => {
                let text = e.body_text();
                let text = text
                    .strip_prefix("Failed to deserialize query string: ")
                    .unwrap_or(&text);
                Err(Problem::validation(vec![FieldError::new("", format!("query: {text}"))]).into())
            }
            Err(other) => {
                Err(Problem::validation(vec![FieldError::new("", other.body_text())]).into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_paths_become_pointers() {
        assert_eq!(
            split_path("cards[3].iccid: invalid type"),
            ("/cards/3/iccid".to_owned(), "invalid type".to_owned())
        );
        assert_eq!(split_path("missing field `name` at line 1").0, "");
    }
}
