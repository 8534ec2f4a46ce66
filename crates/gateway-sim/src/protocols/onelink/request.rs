//! What the platform checks of a request before it answers: its door (limits and injected
//! faults), the token, the `transid`, and the cards a request names.

use super::P;
use super::wire::{Answer, Fail, code, fail, html, refused};
use crate::SimState;
use crate::accounts::InFlight;
use crate::protocols::{Malformed, Refusal, TokenCheck, admit, done};
use crate::routes::Injected;
use crate::stats::Outcome;
use axum::extract::Query;
use axum::response::Response;
use chrono::NaiveDateTime;
use gateway::CallKind;
use std::collections::HashMap;

pub(super) type Params = Query<HashMap<String, String>>;

/// A request past the platform's door: the scripted malformed answer, if any, and the
/// platform's concurrent place held until the answer is built.
pub(super) struct Admitted {
    pub(super) malformed: Option<Malformed>,
    _in_flight: Option<InFlight>,
}

pub(super) async fn enter(st: &SimState, kind: CallKind) -> Result<Admitted, Fail> {
    match admit(st, P, kind).await {
        Ok(g) => Ok(Admitted {
            malformed: None,
            _in_flight: g,
        }),
        Err(Refusal::Fault(Injected::Malformed(m))) => Ok(Admitted {
            malformed: Some(m),
            _in_flight: None,
        }),
        Err(r) => Err(refused(st, r)),
    }
}

/// Runs a handler and records its outcome once.
pub(super) fn finish(st: &SimState, answer: Answer) -> Response {
    let (outcome, resp) = answer.unwrap_or_else(|e| *e);
    done(st, outcome);
    resp
}

pub(super) fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    q.get(name).map(|s| s.trim()).filter(|s| !s.is_empty())
}

/// `transid` = `appid` + `yyyyMMddHHmmss` + an 8-digit sequence.
pub(super) fn transid_ok(appid: &str, transid: &str) -> bool {
    let Some(rest) = transid.strip_prefix(appid) else {
        return false;
    };
    rest.len() == 22
        && rest.bytes().all(|b| b.is_ascii_digit())
        && NaiveDateTime::parse_from_str(&rest[..14], "%Y%m%d%H%M%S").is_ok()
}

/// The checks after the credentials or the token: the `transid` of `appid`, then the scripted
/// HTML page.
pub(super) fn checked(
    admitted: Admitted,
    appid: &str,
    q: &HashMap<String, String>,
) -> Result<Admitted, Fail> {
    if !transid_ok(appid, param(q, "transid").unwrap_or("")) {
        return Err(fail(
            Outcome::BadRequest,
            code::TRANSID,
            "transid格式不正确",
        ));
    }
    if admitted.malformed == Some(Malformed::Html) {
        return Err(Box::new((Outcome::Error, html())));
    }
    Ok(admitted)
}

/// Admits a request made with a token: the door, the token, the `transid`.
pub(super) async fn open(
    st: &SimState,
    kind: CallKind,
    q: &HashMap<String, String>,
) -> Result<Admitted, Fail> {
    let admitted = enter(st, kind).await?;
    let token = param(q, "token").unwrap_or("");
    if st.0.accounts.check_token(P, token) != TokenCheck::Valid {
        return Err(fail(
            Outcome::BadRequest,
            code::TOKEN,
            "token不存在或已过期",
        ));
    }
    let appid = st.0.accounts.credential(P, "appid").unwrap_or_default();
    checked(admitted, &appid, q)
}

/// The one card a single-card request names.
pub(super) fn one_card(q: &HashMap<String, String>) -> Result<String, Fail> {
    if let Some(i) = param(q, "iccid") {
        return Ok(i.to_owned());
    }
    let msg = if param(q, "msisdn").is_some() || param(q, "imsi").is_some() {
        "模拟平台仅支持以iccid查询"
    } else {
        "缺少参数iccid"
    };
    Err(fail(Outcome::BadRequest, code::PARAM, msg))
}

/// The cards of a batch request (`iccids=a_b_c`), within the account's batch limit.
pub(super) fn batch_cards(st: &SimState, q: &HashMap<String, String>) -> Result<Vec<String>, Fail> {
    let Some(raw) = param(q, "iccids") else {
        let msg = if param(q, "msisdns").is_some() || param(q, "imsis").is_some() {
            "模拟平台仅支持以iccids查询"
        } else {
            "缺少参数iccids"
        };
        return Err(fail(Outcome::BadRequest, code::PARAM, msg));
    };
    let cards: Vec<String> = raw
        .split('_')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let limit = st.0.accounts.get(P).batch_limit;
    if cards.is_empty() {
        return Err(fail(Outcome::BadRequest, code::PARAM, "缺少参数iccids"));
    }
    if cards.len() > limit {
        return Err(fail(
            Outcome::BadRequest,
            code::TOO_MANY,
            &format!("单次办理号码数量不能超过{limit}个"),
        ));
    }
    Ok(cards)
}
