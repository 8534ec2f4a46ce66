//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` attributes: the
//! base (info, tags, bearer scheme), the error answers every operation can give, and the links
//! between operations ([`links`]).

mod links;

use crate::error::Problem;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder};
use utoipa::{OpenApi as _, PartialSchema};

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "CMP polling core: admin API",
        description = "Operators' way in: polling configs, manual trigger, assets, explain, audit. \
            Every route needs `Authorization: Bearer <api key>`; `viewer` keys may only read, \
            `operator` keys may also trigger polls, stop/start cards and devices, change polling \
            status, bind/unbind and import; `admin` keys may do everything. Errors are \
            `application/problem+json` (RFC 9457).",
    ),
    components(schemas(Problem, crate::view::HistoryRange, crate::view::ImportMode)),
    tags(
        (name = "polling-configs", description = "Which cards are polled for what, how often"),
        (name = "manual-trigger", description = "Poll cards now"),
        (name = "assets", description = "Cards, devices, packages"),
        (name = "operators", description = "Explain a card; the audit of writes"),
        (name = "monitoring", description = "Queues, rates, the initializer, the metrics history"),
        (name = "concurrency", description = "The cluster-wide semaphore per task type"),
        (name = "alerts", description = "Alert rules and their firings"),
        (name = "data-cleanup", description = "Retention per table, runs and their logs"),
        (name = "carriers", description = "Carrier platforms: protocol, URL, write-only credentials, budget, health, connection test"),
        (name = "carrier-streams", description = "Carriers push usage records (1NCE and emnify Data Streamer); the carrier authenticates with HTTP Basic auth, no API key"),
    )
)]
struct Base;

pub(crate) fn base() -> OpenApi {
    Base::openapi()
}

/// Adds the bearer scheme and the error answers to every operation, and the links.
pub(crate) fn finish(mut api: OpenApi) -> OpenApi {
    let components = api.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some("An API key from `cmp-api keys create`"))
                .build(),
        ),
    );
    components.add_security_scheme(
        "carrier_basic",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Basic)
                .description(Some(
                    "A carrier's push stream: its credential fields `stream_username` and `stream_password`",
                ))
                .build(),
        ),
    );
    api.security = Some(vec![SecurityRequirement::new(
        "bearer",
        Vec::<String>::new(),
    )]);
    for (path, item) in api.paths.paths.iter_mut() {
        let has_path_params = path.contains('{');
        let ops = [
            ("get", false, item.get.as_mut()),
            ("post", true, item.post.as_mut()),
            ("put", true, item.put.as_mut()),
            ("patch", true, item.patch.as_mut()),
            ("delete", true, item.delete.as_mut()),
        ];
        for (method, write, op) in ops {
            if let Some(op) = op {
                op.operation_id = Some(operation_id(method, path));
                add_errors(op, write, has_path_params);
            }
        }
    }
    links::add(&mut api);
    api
}

/// A unique, readable operation id: `get_cards_id_explain` for `GET .../cards/{id}/explain`.
fn operation_id(method: &str, path: &str) -> String {
    let rest = path.strip_prefix(crate::guard::PREFIX).unwrap_or(path);
    let mut id = method.to_owned();
    for part in rest.split('/').filter(|p| !p.is_empty()) {
        id.push('_');
        id.extend(
            part.chars()
                .filter(|c| !matches!(c, '{' | '}'))
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
    }
    id
}

fn problem(description: &str) -> RefOr<utoipa::openapi::Response> {
    let _ = Problem::schema;
    ResponseBuilder::new()
        .description(description)
        .content(
            crate::error::PROBLEM_JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
        .into()
}

fn add_errors(op: &mut Operation, write: bool, has_path_params: bool) {
    // OpenAPI requires a description on every response.
    for (code, response) in op.responses.responses.iter_mut() {
        if let RefOr::T(r) = response
            && r.description.is_empty()
        {
            r.description = code
                .parse::<u16>()
                .ok()
                .and_then(|c| axum::http::StatusCode::from_u16(c).ok())
                .and_then(|c| c.canonical_reason())
                .unwrap_or("Answer")
                .to_owned();
        }
    }
    let mut add = |code: &str, description: &str| {
        op.responses
            .responses
            .entry(code.to_owned())
            .or_insert_with(|| problem(description));
    };
    add("401", "No key, or an unknown or revoked key");
    add("403", "The key's role may not do this");
    add(
        "422",
        "A parameter or field has a bad value; `errors[]` names each",
    );
    add("500", "Internal error (logged; answered generically)");
    add("503", "The request did not complete in time");
    let _ = has_path_params;
    add(
        "404",
        "No such resource (in the path, or named by the body or query)",
    );
    if write {
        add("400", "The body is not valid JSON");
        add(
            "409",
            "A unique value is taken, the card is busy, or the carrier does not know it",
        );
        add("413", "The body is too large");
        add("415", "The body is not application/json");
        add(
            "502",
            "The carrier refused or did not answer; nothing changed",
        );
    }
}

/// The document as served at `/api/openapi.json`, pretty-printed (`cmp-api openapi`).
pub(crate) fn document_json() -> anyhow::Result<String> {
    let router: utoipa_axum::router::OpenApiRouter<crate::state::AppState> =
        utoipa_axum::router::OpenApiRouter::with_openapi(base())
            .nest(crate::guard::PREFIX, crate::routes::all());
    let mut api = router.into_openapi();
    api.merge(crate::stream::routes().into_openapi());
    Ok(finish(api).to_pretty_json()?)
}
