//! axum's extractors with their rejections turned into problem+json: malformed JSON is a 400,
//! a well-formed body with a bad value a 422 naming the field, a bad path or query value 422.

use crate::error::{ApiError, Problem};
use admin::FieldError;
use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;
use serde_json::Value;

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
        if !json_content_type(req.headers()) {
            return Err(Problem::of_status(StatusCode::UNSUPPORTED_MEDIA_TYPE).into());
        }
        let bytes = match Bytes::from_request(req, state).await {
            Ok(bytes) => bytes,
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(Problem::of_status(StatusCode::PAYLOAD_TOO_LARGE).into());
            }
            Err(e) => {
                return Err(
                    Problem::new(StatusCode::BAD_REQUEST, "bad-request", e.body_text()).into(),
                );
            }
        };
        match axum::Json::<T>::from_bytes(&bytes) {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            // JSON Schema counts `5.0` as an integer, so the document's `integer` fields admit
            // it; serde's integers do not. Only then is the body parsed twice.
            Err(JsonRejection::JsonDataError(_)) if let Some(fixed) = whole_numbers(&bytes) => {
                axum::Json::<T>::from_bytes(&fixed)
                    .map(|axum::Json(v)| ApiJson(v))
                    .map_err(json_rejection)
            }
            Err(e) => Err(json_rejection(e)),
        }
    }
}

/// `application/json` or `application/*+json`, parameters allowed (as `axum::Json` has it).
fn json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (subtype.eq_ignore_ascii_case("json")
            || subtype
                .rsplit_once('+')
                .is_some_and(|(_, suffix)| suffix.eq_ignore_ascii_case("json")))
}

/// The body again with every whole number written as a float (`5.0`, `1e3`) written as an
/// integer, when it holds one within the range a double keeps exact; `None` otherwise.
fn whole_numbers(bytes: &[u8]) -> Option<Vec<u8>> {
    /// 2^53: past it a double no longer tells neighbouring integers apart.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    fn fix(value: &mut Value) -> bool {
        match value {
            Value::Number(n) if n.is_f64() => match n.as_f64() {
                #[allow(clippy::cast_possible_truncation)]
                Some(f) if f.fract() == 0.0 && f.abs() <= EXACT => {
                    *value = Value::from(f as i64);
                    true
                }
                _ => false,
            },
            Value::Array(items) => items.iter_mut().map(fix).filter(|changed| *changed).count() > 0,
            Value::Object(fields) => {
                fields
                    .values_mut()
                    .map(fix)
                    .filter(|changed| *changed)
                    .count()
                    > 0
            }
            _ => false,
        }
    }
    let mut value: Value = serde_json::from_slice(bytes).ok()?;
    if !fix(&mut value) {
        return None;
    }
    serde_json::to_vec(&value).ok()
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => {
            let text = e.body_text();
            let text = text
                .strip_prefix("Failed to deserialize the JSON body into the target type: ")
                .unwrap_or(&text);
            invalid("", text)
        }
        JsonRejection::JsonSyntaxError(e) => Problem::new(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            format!(
                "the body is not valid JSON: {}",
                e.body_text().rsplit(": ").next().unwrap_or("")
            ),
        )
        .into(),
        JsonRejection::MissingJsonContentType(_) => {
            Problem::of_status(StatusCode::UNSUPPORTED_MEDIA_TYPE).into()
        }
        other => {
            let status = other.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                return Problem::of_status(status).into();
            }
            Problem::new(StatusCode::BAD_REQUEST, "bad-request", other.body_text()).into()
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

    #[test]
    fn whole_floats_become_integers() {
        let fixed = whole_numbers(br#"{"a": 5.0, "b": [1e3, 2.5], "c": {"d": -7.0}, "e": 1e300}"#);
        let fixed: Value = serde_json::from_slice(&fixed.unwrap()).unwrap();
        assert_eq!(
            fixed,
            serde_json::json!({"a": 5, "b": [1000, 2.5], "c": {"d": -7}, "e": 1e300})
        );
        assert!(whole_numbers(br#"{"a": 5, "b": 2.5}"#).is_none());
        assert!(whole_numbers(b"not json").is_none());
    }

    #[test]
    fn json_content_types() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, v.parse().unwrap());
            json_content_type(&h)
        };
        assert!(with("application/json"));
        assert!(with("application/json; charset=utf-8"));
        assert!(with("Application/JSON"));
        assert!(with("application/merge-patch+json"));
        assert!(!with("text/json"));
        assert!(!with("application/jsonx"));
        assert!(!json_content_type(&HeaderMap::new()));
    }
}
