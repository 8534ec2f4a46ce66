//! The simulator's HTTP surface: the protocol and the control API. Bad input gets a 4xx with a
//! JSON `{error}` body, never a panic.

use super::faults::{Script, ScriptStep};
use super::fleet::{SimCardPatch, SimCardSpec, month_string};
pub(crate) use super::inject::{Injected, inject, retry_after_secs};
use super::stats::Outcome;
use super::{FaultsPatch, MAX_CARDS_PER_CALL, SimState, wall_second};
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use domain::CarrierProtocol;
use gateway::CallKind;
use gateway::protocol::{
    CardRequest, ErrorBody, NetworkAnswer, PackagesAnswer, RealNameAnswer, UsageAnswer,
};
use serde::{Deserialize, Serialize};
use tracing::{trace, warn};

/// Room for 100,000 cards with a package each.
const CARDS_BODY_LIMIT: usize = 256 * 1024 * 1024;

pub(super) fn router(state: SimState, only: Option<CarrierProtocol>) -> Router {
    let mut r = Router::new();
    match only.and_then(super::protocols::routes) {
        Some(platform) => r = r.merge(platform),
        None => {
            for kind in CallKind::ALL {
                r = r.route(
                    kind.path(),
                    post(
                        move |s: State<SimState>,
                              body: Result<Json<CardRequest>, JsonRejection>| {
                            protocol(s, kind, body)
                        },
                    ),
                );
            }
            r = super::protocols::mount_all(r);
        }
    }
    r.route(
        "/sim/accounts/{protocol}",
        get(get_account).put(put_account),
    )
    .route(
        "/sim/accounts/{protocol}/expire-tokens",
        post(expire_tokens),
    )
    .route(
        "/sim/cards",
        post(post_cards).layer(DefaultBodyLimit::max(CARDS_BODY_LIMIT)),
    )
    .route("/sim/cards/{iccid}", get(get_card).patch(patch_card))
    .route("/sim/faults", put(put_faults).get(get_faults))
    .route("/sim/script", put(put_script))
    .route("/sim/stats", get(get_stats))
    .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route".to_owned()) })
    .with_state(state)
}

fn error(status: StatusCode, message: String) -> Response {
    (status, Json(ErrorBody { error: message })).into_response()
}

fn rejection(r: JsonRejection) -> Response {
    error(r.status(), r.body_text())
}

fn throttled(secs: u64, message: &str) -> Response {
    let mut resp = error(StatusCode::TOO_MANY_REQUESTS, message.to_owned());
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    resp
}

/// Answers one protocol request, faults first (see the module doc for the order).
async fn protocol(
    State(st): State<SimState>,
    kind: CallKind,
    body: Result<Json<CardRequest>, JsonRejection>,
) -> Response {
    st.0.stats.arrived(kind, wall_second());
    let (outcome, resp) = answer(&st, kind, body).await;
    st.0.stats.ended(outcome);
    trace!(call = %kind, outcome = outcome.as_str(), "sim request");
    resp
}

async fn answer(
    st: &SimState,
    kind: CallKind,
    body: Result<Json<CardRequest>, JsonRejection>,
) -> (Outcome, Response) {
    let iccid = match body {
        Ok(Json(r)) => r.iccid,
        Err(r) => return (Outcome::BadRequest, rejection(r)),
    };
    if kind.is_command() {
        st.0.fleet.count_command(&iccid, kind);
    }
    if let Some(fault) = inject(st, kind).await {
        let resp = match fault {
            Injected::TimedOut => error(StatusCode::GATEWAY_TIMEOUT, "injected timeout".to_owned()),
            Injected::Status(429) => throttled(retry_after_secs(st), "scripted throttle"),
            Injected::Status(code) => {
                let status = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
                error(status, format!("scripted failure {code}"))
            }
            Injected::OverQuota => throttled(1, "quota exceeded"),
            Injected::Throttled { retry_after_secs } => throttled(retry_after_secs, "throttled"),
            Injected::Unavailable => error(
                StatusCode::SERVICE_UNAVAILABLE,
                "carrier unavailable".to_owned(),
            ),
            Injected::Malformed(m) => error(
                StatusCode::BAD_GATEWAY,
                format!("scripted malformed answer {m:?}"),
            ),
        };
        return (fault.outcome(), resp);
    }
    let fleet = &st.0.fleet;
    let found = match kind {
        CallKind::Realname => fleet.realname(&iccid).map(|s| {
            Json(RealNameAnswer {
                iccid: iccid.clone(),
                real_name_status: s,
            })
            .into_response()
        }),
        CallKind::Usage => fleet.usage(&iccid, st.current_month()).map(|(m, total)| {
            Json(UsageAnswer {
                iccid: iccid.clone(),
                month: month_string(m),
                month_total_mb: total,
            })
            .into_response()
        }),
        CallKind::Packages => fleet.packages(&iccid).map(|p| {
            Json(PackagesAnswer {
                iccid: iccid.clone(),
                packages: p,
            })
            .into_response()
        }),
        CallKind::Stop | CallKind::Start => fleet.set_network(&iccid, kind).map(|s| {
            Json(NetworkAnswer {
                iccid: iccid.clone(),
                network_status: s,
            })
            .into_response()
        }),
    };
    match found {
        Some(resp) => (Outcome::Ok, resp),
        None => (
            Outcome::NotFound,
            error(StatusCode::NOT_FOUND, format!("unknown card {iccid}")),
        ),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CardsBody {
    cards: Vec<SimCardSpec>,
}

#[derive(Debug, Serialize)]
struct Upserted {
    upserted: usize,
    cards: usize,
}

async fn post_cards(
    State(st): State<SimState>,
    body: Result<Json<CardsBody>, JsonRejection>,
) -> Response {
    let cards = match body {
        Ok(Json(b)) => b.cards,
        Err(r) => return rejection(r),
    };
    if cards.len() > MAX_CARDS_PER_CALL {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "at most {MAX_CARDS_PER_CALL} cards a call, got {}",
                cards.len()
            ),
        );
    }
    // A batch of 100,000 takes tens of milliseconds: keep it off the request threads.
    let worker = st.clone();
    match tokio::task::spawn_blocking(move || worker.upsert_cards(cards)).await {
        Ok(Ok(n)) => Json(Upserted {
            upserted: n,
            cards: st.card_count(),
        })
        .into_response(),
        Ok(Err(e)) => error(StatusCode::UNPROCESSABLE_ENTITY, e),
        Err(e) => {
            warn!(error = %e, "card upsert task failed");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "card upsert failed".to_owned(),
            )
        }
    }
}

async fn get_card(State(st): State<SimState>, Path(iccid): Path<String>) -> Response {
    match st.card(&iccid) {
        Some(v) => Json(v).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("unknown card {iccid}")),
    }
}

async fn patch_card(
    State(st): State<SimState>,
    Path(iccid): Path<String>,
    body: Result<Json<SimCardPatch>, JsonRejection>,
) -> Response {
    let patch = match body {
        Ok(Json(p)) => p,
        Err(r) => return rejection(r),
    };
    match st.patch_card(&iccid, patch) {
        Ok(Some(v)) => Json(v).into_response(),
        Ok(None) => error(StatusCode::NOT_FOUND, format!("unknown card {iccid}")),
        Err(e) => error(StatusCode::UNPROCESSABLE_ENTITY, e),
    }
}

async fn put_faults(
    State(st): State<SimState>,
    body: Result<Json<FaultsPatch>, JsonRejection>,
) -> Response {
    let patch = match body {
        Ok(Json(p)) => p,
        Err(r) => return rejection(r),
    };
    match st.set_faults(patch) {
        Ok(f) => Json(f).into_response(),
        Err(e) => error(StatusCode::UNPROCESSABLE_ENTITY, e),
    }
}

async fn get_faults(State(st): State<SimState>) -> Response {
    Json(st.faults()).into_response()
}

#[derive(Debug, Serialize)]
struct ScriptAnswer {
    pending: usize,
}

async fn put_script(
    State(st): State<SimState>,
    body: Result<Json<Script>, JsonRejection>,
) -> Response {
    let script = match body {
        Ok(Json(s)) => s,
        Err(r) => return rejection(r),
    };
    let bad = script.fail_next.iter().find_map(|s| match s {
        ScriptStep::Status(c) if !(400..=599).contains(c) => Some(*c),
        _ => None,
    });
    if let Some(code) = bad {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("fail_next holds {code}: a status must be 400..=599"),
        );
    }
    Json(ScriptAnswer {
        pending: st.set_script(script),
    })
    .into_response()
}

async fn get_stats(State(st): State<SimState>) -> Response {
    Json(st.stats()).into_response()
}

fn protocol_of(name: &str) -> Result<CarrierProtocol, Box<Response>> {
    name.parse::<CarrierProtocol>()
        .map_err(|e| Box::new(error(StatusCode::NOT_FOUND, e)))
}

async fn get_account(State(st): State<SimState>, Path(name): Path<String>) -> Response {
    match protocol_of(&name) {
        Ok(p) => Json(st.account(p)).into_response(),
        Err(r) => *r,
    }
}

async fn put_account(
    State(st): State<SimState>,
    Path(name): Path<String>,
    body: Result<Json<super::SimAccountPatch>, JsonRejection>,
) -> Response {
    let p = match protocol_of(&name) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    match body {
        Ok(Json(patch)) => Json(st.set_account(p, patch)).into_response(),
        Err(r) => rejection(r),
    }
}

#[derive(Debug, Serialize)]
struct Expired {
    expired: usize,
}

async fn expire_tokens(State(st): State<SimState>, Path(name): Path<String>) -> Response {
    match protocol_of(&name) {
        Ok(p) => Json(Expired {
            expired: st.expire_tokens(p),
        })
        .into_response(),
        Err(r) => *r,
    }
}
