//! `POST /api/carriers/{carrier_id}/stream`: the carriers' push streams (1NCE's and emnify's
//! Data Streamer, REST/webhook integration). Not under `/api/admin`: the carrier calls it, not
//! an operator, so it takes no API key; each carrier authenticates with HTTP Basic auth, the
//! user and password being its credential fields `stream_username` and `stream_password`.
//!
//! The order of checks: the carrier (404 unknown, or its protocol has no stream), its
//! credentials (401, before a byte of the body is read), enabled (403), the body (413 beyond
//! [`MAX_STREAM_BODY`], 400 not JSON, 422 a record that is not a record, each bad field named);
//! only then is anything written (`admin::carriers::stream`). Every refusal is problem+json
//! and writes nothing; the carrier resends what it did not get a 200 for.

use crate::error::{ApiResult, Problem};
use crate::mirror::{mirror, view};
use crate::state::AppState;
use crate::view::Evaluation;
use admin::carriers::stream::StreamRefusal;
use axum::Json;
use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use domain::CarrierId;
use gateway::carriers::stream::parse_data_streamer;
use rust_decimal::Decimal;
use std::collections::BTreeMap;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The largest post taken: 1NCE's 3,000 records of about 1.3 kB each, four times over.
pub(crate) const MAX_STREAM_BODY: usize = 16 * 1024 * 1024;

const REALM: &str = "Basic realm=\"cmp carrier stream\", charset=\"UTF-8\"";

view! {
    /// What a post did, its records counted by outcome.
    struct StreamReport from admin::carriers::stream::StreamReport {
        /// Records in the post.
        records: usize,
        /// Data usage records counted on their card.
        applied: usize,
        /// Records applied before (a replay) or twice in the post: nothing changed.
        duplicate: usize,
        /// Data usage records of an ICCID no live card of the carrier has: nothing written.
        unknown_card: usize,
        /// Data usage records of a month already closed on their card: kept, nothing counted.
        closed_month: usize,
        /// Records that are no data usage (SMS records, events): nothing written.
        ignored: usize,
        /// The ignored records by kind (`sms`, `event`, `traffic_type_<id>`).
        ignored_kinds: BTreeMap<String, usize>,
        /// Megabytes the post counted, over every card.
        #[schema(value_type = String, example = "12.5")]
        counted_mb: Decimal,
        /// Cards whose counters changed.
        cards: usize,
        /// The evaluations the decision table asked for (a card over its limit stopped, ...).
        evaluations: Vec<Evaluation>,
    }
}

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(post_stream))
}

/// A carrier's push stream posts usage records (the carrier calls it, with HTTP Basic auth:
/// its `stream_username` and `stream_password`). The body is a JSON array of Data Streamer
/// records (1NCE: up to 3,000) or one record. Data usage records (`traffic_type.id` 5) are
/// counted on the card of their `sim.iccid`, once each (`id`): a replayed record is a
/// `duplicate` and changes nothing; SMS records and events are `ignored`. Each changed card
/// is evaluated as a usage poll would and its next usage poll is pushed back. A post with a
/// bad record writes nothing (422, `errors[]` names each field).
#[utoipa::path(post, path = "/api/carriers/{carrier_id}/stream", tag = "carrier-streams",
    params(("carrier_id" = i64, Path, description = "carrier id (`tb_carrier`)")),
    request_body(content = Vec<serde_json::Value>, content_type = "application/json",
        description = "Data Streamer usage or event records (an array, or one record)"),
    security(("carrier_basic" = [])),
    responses(
        (status = 200, body = StreamReport),
        (status = 401, description = "No, malformed or wrong Basic auth, or none configured for the carrier", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The carrier is disabled", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such carrier, or its protocol has no push stream", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is larger than 16 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A record is not a record; `errors[]` names each field (nothing written)", body = Problem, content_type = "application/problem+json"),
    ))]
async fn post_stream(
    State(state): State<AppState>,
    axum::extract::Path(carrier_id): axum::extract::Path<String>,
    request: Request,
) -> ApiResult<Response> {
    let Ok(carrier_id) = carrier_id.parse::<i64>() else {
        return Err(Problem::new(StatusCode::NOT_FOUND, "not-found", "no such carrier").into());
    };
    let (parts, body) = request.into_parts();
    let basic = basic_auth(&parts.headers);
    let basic = basic.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
    let account = match state.streams.admit(CarrierId(carrier_id), basic).await {
        Ok(account) => account,
        Err(Err(e)) => return Err(e.into()),
        Err(Ok(refusal)) => return Ok(refused(refusal)),
    };
    let too_large = || Problem::of_status(StatusCode::PAYLOAD_TOO_LARGE);
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_STREAM_BODY) {
        return Err(too_large().into());
    }
    let bytes = to_bytes(body, MAX_STREAM_BODY).await.map_err(|e| {
        if e.to_string().contains("length limit") {
            too_large()
        } else {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-request",
                "the body could not be read",
            )
        }
    })?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-request",
            format!("the body is not valid JSON: {e}"),
        )
    })?;
    let records = parse_data_streamer(&value).map_err(|faults| {
        metrics::counter!("cmp_carrier_stream_refused_total",
            "carrier" => carrier_id.to_string(), "why" => "invalid")
        .increment(1);
        Problem::validation(
            faults
                .into_iter()
                .map(|f| admin::FieldError::new(f.pointer, f.message))
                .collect(),
        )
    })?;
    let report = state.streams.apply(&account, records).await?;
    Ok(Json(mirror::<_, StreamReport>(report)).into_response())
}

/// The user and password of an `Authorization: Basic` header, if well formed.
fn basic_auth(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

fn refused(refusal: StreamRefusal) -> Response {
    match refusal {
        StreamRefusal::NotFound(what) => Problem::new(
            StatusCode::NOT_FOUND,
            "not-found",
            format!("{what} not found"),
        )
        .into_response(),
        StreamRefusal::Unauthenticated(why) => {
            let mut r =
                Problem::new(StatusCode::UNAUTHORIZED, "unauthenticated", why).into_response();
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(REALM));
            r
        }
        StreamRefusal::Disabled => Problem::new(
            StatusCode::FORBIDDEN,
            "carrier-disabled",
            "the carrier is disabled; its stream is refused until it is enabled",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_is_read() {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic dXNlcjpwYTpzcw=="),
        );
        assert_eq!(
            basic_auth(&h),
            Some(("user".to_owned(), "pa:ss".to_owned()))
        );
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        assert_eq!(basic_auth(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic !!"));
        assert_eq!(basic_auth(&h), None);
    }
}
