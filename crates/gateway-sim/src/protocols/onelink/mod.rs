//! China Mobile OneLink EC API v5 (中国移动物联卡能力开放平台), as `https://api.iot.10086.cn/v5/ec`
//! answers; `docs/carriers/onelink.md` is the page, with what the public material confirms and
//! what is assumed.
//!
//! Authentication: `get/token?appid=&password=&transid=` issues a token living the account's
//! `token_ttl_secs` (`result[0].token`, `result[0].ttl` in seconds); every other request carries
//! `transid` and `token` as query parameters. `transid` is `appid + yyyyMMddHHmmss + 8 digits`.
//! An unknown or lapsed token is status `12021`. Every answer is HTTP 200 with the envelope
//! `{status, message, result: [...]}`, `status` `"0"` on success; figures of data are KB
//! (1 MB = 1024 KB).
//!
//! | path | call | kind |
//! | --- | --- | --- |
//! | `get/token` | CMIOT_API23000 token | realname (auth) |
//! | `query/sim-real-name-status` | CMIOT_API23A10 real-name status | realname |
//! | `query/sim-real-name-status/batch` | the same, `iccids=a_b_c` (assumed path, see below) | realname |
//! | `query/sim-data-usage` | CMIOT_API25U04 month-to-date usage (KB) | usage |
//! | `query/sim-data-usage/batch` | the same, `iccids=a_b_c` (assumed path) | usage |
//! | `query/sim-status` | CMIOT_API25S04 SIM status | realname (a card read) |
//! | `query/sim-status/batch` | the same, `iccids=a_b_c` (assumed path) | realname |
//! | `query/sim-data-margin` | CMIOT_API23U07 offerings' total/used/margin (KB) | packages |
//! | `change/sim-status` | CMIOT_API23S03 stop (`operType=0`) / resume (`1`) | stop, start |
//! | `change/sim-status/batch` | CMIOT_API23S06 batch change (`9` stop, `11` resume), a job | stop, start |
//! | `query/sim-batch-result` | CMIOT_API23M10 result of a batch job (`jobId`) | realname |
//!
//! The three `query/.../batch` paths are *assumed* (no public source shows them): they answer
//! HTTP 404 unless the account serves assumed calls (`SimAccount::assumed_calls`, `PUT
//! /sim/accounts/onelink {"assumed_calls": true}`).
//!
//! GET and POST are both accepted, parameters in the query string. The simulator knows cards by
//! ICCID only (`msisdn`/`imsi` are refused as a parameter error).

mod change;
mod request;
#[cfg(test)]
mod tests;
mod wire;

use crate::SimState;
use crate::protocols::Malformed;
use crate::stats::Outcome;
use axum::Router;
use axum::extract::{Query, State};
use axum::routing::get;
use domain::{CarrierProtocol, PackageStatus};
use gateway::CallKind;
use request::{Params, batch_cards, checked, enter, finish, one_card, open, param};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use std::collections::HashMap;
use wire::{
    Answer, batch, card_status, code, fail, kb, last_change_date, no_card, not_found, ok,
    realname_word, single, status_word, undocumented,
};

const P: CarrierProtocol = CarrierProtocol::OneLink;

/// A route answering GET and POST with `$answer(&st, &q, ..)`, its outcome recorded once.
macro_rules! answer {
    ($answer:path $(, $arg:expr)*) => {{
        let handler = |State(st): State<SimState>, Query(q): Params| async move {
            let answer = $answer(&st, &q $(, $arg)*).await;
            finish(&st, answer)
        };
        get(handler).post(handler)
    }};
}

pub(super) fn routes() -> Router<SimState> {
    Router::new()
        .route("/get/token", answer!(token))
        .route("/query/sim-real-name-status", answer!(one, &REALNAME))
        .route(
            "/query/sim-real-name-status/batch",
            answer!(assumed, &REALNAME),
        )
        .route("/query/sim-data-usage", answer!(one, &USAGE))
        .route("/query/sim-data-usage/batch", answer!(assumed, &USAGE))
        .route("/query/sim-status", answer!(one, &STATUS))
        .route("/query/sim-status/batch", answer!(assumed, &STATUS))
        .route("/query/sim-data-margin", answer!(one, &MARGIN))
        .route("/change/sim-status", answer!(change::change))
        .route("/change/sim-status/batch", answer!(change::change_batch))
        .route("/query/sim-batch-result", answer!(change::batch_result))
}

// ---------------------------------------------------------------- token

async fn token(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let admitted = enter(st, CallKind::Realname).await?;
    let appid = param(q, "appid").unwrap_or("");
    let password = param(q, "password").unwrap_or("");
    if !st.0.accounts.credential_is(P, "appid", appid)
        || !st.0.accounts.credential_is(P, "password", password)
    {
        return Err(fail(
            Outcome::BadRequest,
            code::AUTH,
            "APPID不存在或密码错误",
        ));
    }
    let _admitted = checked(admitted, appid, q)?;
    let (token, ttl) = st.0.accounts.issue_token(P);
    Ok((
        Outcome::Ok,
        ok(vec![
            json!({ "token": token, "ttl": ttl.as_secs().to_string() }),
        ]),
    ))
}

// ---------------------------------------------------------------- queries

/// A query of cards, single (`iccid`) or batch (`iccids`).
struct Lookup {
    /// The call it counts as.
    kind: CallKind,
    /// Whether a scripted `UnknownStatus` answers an undocumented code for the whole request
    /// (else the query's own status word shows it, on the single or the first card).
    undocumented: bool,
    /// A known card's fields; `None`: the card is unknown.
    fields: fn(&Card<'_>) -> Option<Value>,
}

/// One card as a query reads it.
struct Card<'a> {
    st: &'a SimState,
    iccid: &'a str,
    /// The platform's current month (usage).
    month: crate::fleet::MonthKey,
    /// The scripted malformed answer where it shows on this card.
    malformed: Option<Malformed>,
    /// Whether the card is read for a batch answer.
    in_batch: bool,
}

const REALNAME: Lookup = Lookup {
    kind: CallKind::Realname,
    undocumented: false,
    fields: |c| {
        let r = c.st.0.fleet.realname(c.iccid)?;
        let word = status_word(c.malformed, "9", realname_word(r));
        Some(json!({ "realNameStatus": word }))
    },
};

const USAGE: Lookup = Lookup {
    kind: CallKind::Usage,
    undocumented: true,
    fields: |c| {
        let (_, total) = c.st.0.fleet.usage(c.iccid, c.month)?;
        // No usage this month: a blank figure, as the public response models describe it.
        let amount = if total.is_zero() {
            String::new()
        } else {
            kb(total)
        };
        Some(if c.in_batch {
            json!({ "dataAmount": amount })
        } else {
            json!({ "dataAmount": amount, "apnUseAmountList": [] })
        })
    },
};

/// A SIM status read counts as a real-name read.
const STATUS: Lookup = Lookup {
    kind: CallKind::Realname,
    undocumented: false,
    fields: |c| {
        let n = c.st.0.fleet.network(c.iccid)?;
        let word = status_word(c.malformed, "3", card_status(n));
        Some(json!({ "cardStatus": word, "lastChangeDate": last_change_date(c.st, c.iccid) }))
    },
};

/// The offerings in force (the fleet's `Active` packages): total, used and margin in KB. A
/// package without a limit has no `totalAmount` nor `remainAmount`.
const MARGIN: Lookup = Lookup {
    kind: CallKind::Packages,
    undocumented: true,
    fields: |c| {
        let packages = c.st.0.fleet.packages(c.iccid)?;
        let list: Vec<Value> = packages
            .iter()
            .filter(|p| p.status == PackageStatus::Active)
            .map(|p| {
                let mut m = json!({
                    "offeringId": p.external_id,
                    "offeringName": p.external_id,
                    "apnName": "CMIOT",
                    "useAmount": kb(p.used_mb),
                });
                if let (Some(limit), Value::Object(o)) = (p.limit_mb, &mut m) {
                    o.insert("totalAmount".into(), Value::String(kb(limit)));
                    o.insert(
                        "remainAmount".into(),
                        Value::String(kb((limit - p.used_mb).max(Decimal::ZERO))),
                    );
                }
                m
            })
            .collect();
        Some(json!({ "accmMarginList": list }))
    },
};

/// Refuses the request with an undocumented code when the lookup answers so and the script asks
/// for `UnknownStatus`.
fn guard(lookup: &Lookup, malformed: Option<Malformed>) -> Result<(), wire::Fail> {
    if lookup.undocumented && malformed == Some(Malformed::UnknownStatus) {
        return Err(undocumented());
    }
    Ok(())
}

/// The single-card query (`iccid`).
async fn one(st: &SimState, q: &HashMap<String, String>, lookup: &Lookup) -> Answer {
    let a = open(st, lookup.kind, q).await?;
    let iccid = one_card(q)?;
    guard(lookup, a.malformed)?;
    let card = Card {
        st,
        iccid: &iccid,
        month: st.current_month(),
        malformed: a.malformed,
        in_batch: false,
    };
    let fields = (lookup.fields)(&card).ok_or_else(no_card)?;
    Ok(single(fields, a.malformed))
}

/// A batch query no public source shows (`docs/carriers/onelink.md`, section 2, *assumed*):
/// HTTP 404, as a platform without it answers, unless the account serves the assumed calls
/// (`SimAccount::assumed_calls`). The refusal counts as a request of the lookup's kind.
async fn assumed(st: &SimState, q: &HashMap<String, String>, lookup: &Lookup) -> Answer {
    if !st.0.accounts.get(P).assumed_calls {
        st.0.stats.arrived(lookup.kind, crate::wall_second());
        return Err(not_found());
    }
    many(st, q, lookup).await
}

/// The batch query (`iccids=a_b_c`), in the order asked.
async fn many(st: &SimState, q: &HashMap<String, String>, lookup: &Lookup) -> Answer {
    let a = open(st, lookup.kind, q).await?;
    let cards = batch_cards(st, q)?;
    guard(lookup, a.malformed)?;
    let month = st.current_month();
    batch(&cards, a.malformed, |iccid, malformed| {
        (lookup.fields)(&Card {
            st,
            iccid,
            month,
            malformed,
            in_batch: true,
        })
    })
}
