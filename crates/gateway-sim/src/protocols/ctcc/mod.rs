//! China Telecom 5GCMP (天翼物联 5G 连接管理平台, CMP 5G), as its API gateway
//! (`https://cmp-api.ctwing.cn:20164`) answers; `docs/carriers/ctcc-5gcmp.md` is the page, with
//! what the public material confirms and what is assumed.
//!
//! Every request is signed, there is no token: headers `AppKey`, `Timestamp`
//! (`yyyyMMddHHmmss`) and `Sign` = the hexadecimal of the ASCII of the lower-case hexadecimal MD5
//! of `sorted query + raw body + secret + timestamp`, upper-cased (the gateway's `SignUtil.signMD5`
//! rule, document section 1.2.3.1). The simulator recomputes it with the account's secret
//! ([`signature`]); [`wire`] renders the answers.
//!
//! | path | call | kind |
//! | --- | --- | --- |
//! | `POST /api/v1/realName/qryRealNameStatus` | BQ019 batch real-name status | realname |
//! | `POST /api/v1/prod/batchQrySimStatus` | BQ020 batch SIM status | realname (a card query) |
//! | `POST /api/v1/batchQry/batchQryFlowByMonth` | batch usage of the month | usage |
//! | `GET /api/v1/prod/qryProdInstInfo/{access_number}` | products (offers) of a card | packages |
//! | `GET /5gcmp/openapi/v1/common/disabledNumberService` | LC002 stop/resume (19/20) | stop, start |

mod signature;
mod wire;

#[cfg(test)]
mod tests;

use super::{Malformed, Refusal, admit, done, month_string};
use crate::SimState;
use crate::routes::Injected;
use crate::stats::Outcome;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use domain::{CarrierProtocol, NetworkStatus, RealNameStatus};
use gateway::CallKind;
use serde_json::{Value, json};
use signature::check_signature;
use wire::{
    OTHER_NUMBER, code, envelope, html, numbers, offer, outcome, refused, status_item, xml,
};

const P: CarrierProtocol = CarrierProtocol::Ctcc5gcmp;

pub(super) fn routes() -> Router<SimState> {
    let mut r = Router::new();
    for q in [&REALNAME, &SIM_STATUS, &FLOW_BY_MONTH] {
        r = r.route(
            q.path,
            post(
                move |State(st): State<SimState>,
                      headers: HeaderMap,
                      RawQuery(query): RawQuery,
                      body: Bytes| batch(st, q, headers, query, body),
            ),
        );
    }
    r.route(
        "/api/v1/prod/qryProdInstInfo/{access_number}",
        get(products),
    )
    .route(
        "/5gcmp/openapi/v1/common/disabledNumberService",
        get(disabled_number),
    )
}

// ---------------------------------------------------------------- admission

/// A request let in: the platform's concurrent place, held until the answer is built, and the
/// scripted malformed answer the handler is to give.
struct Admitted {
    _in_flight: Option<crate::accounts::InFlight>,
    malformed: Option<Malformed>,
}

/// Runs `admit` (keeping a scripted malformed answer for the handler), then the gateway's
/// signature check, then a scripted HTML page: a request that passes is the handler's.
async fn open(
    st: &SimState,
    kind: CallKind,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Result<Admitted, Response> {
    let admitted = match admit(st, P, kind).await {
        Ok(g) => Admitted {
            _in_flight: g,
            malformed: None,
        },
        Err(Refusal::Fault(Injected::Malformed(m))) => Admitted {
            _in_flight: None,
            malformed: Some(m),
        },
        Err(r) => return Err(refused(st, r)),
    };
    if let Err(r) = check_signature(st, headers, query, body) {
        done(st, Outcome::BadRequest);
        return Err(*r);
    }
    if admitted.malformed == Some(Malformed::Html) {
        done(st, Outcome::Error);
        return Err(html());
    }
    Ok(admitted)
}

// ---------------------------------------------------------------- batch queries

/// What distinguishes the three batch queries.
struct BatchQuery {
    path: &'static str,
    kind: CallKind,
    /// The body's list field.
    field: &'static str,
    /// One number's item and whether the card is known.
    item: fn(&SimState, &str, Option<Malformed>) -> (Value, bool),
    /// The list as the answer's `data`.
    wrap: fn(Vec<Value>) -> Value,
}

/// BQ019: `{"accessNumber": [..]}` → `data.statusList[] {accessNumber, status, statusDesc}`,
/// status `1` 已实名, `0` 未实名, `-1` 号码不存在.
const REALNAME: BatchQuery = BatchQuery {
    path: "/api/v1/realName/qryRealNameStatus",
    kind: CallKind::Realname,
    field: "accessNumber",
    item: |st, n, m| {
        let row = st.0.fleet.realname(n).map(|s| match s {
            RealNameStatus::Verified => ("1", "已实名"),
            RealNameStatus::NotVerified => ("0", "未实名"),
        });
        status_item(n, ["status", "statusDesc"], "9", row, m)
    },
    wrap: |items| json!({ "statusList": items }),
};

/// BQ020: `{"accessNumbers": [..]}` → `data.simStatusList[] {accessNumber, simStatus,
/// simStatusName}`: 1 可激活, 2 测试激活, 3 测试去激活, 4 在用, 5 停机, 6 运营商管理状态, 7 拆机;
/// `-1` 号码不存在. The simulated cards are 在用 (online) or 停机 (stopped).
const SIM_STATUS: BatchQuery = BatchQuery {
    path: "/api/v1/prod/batchQrySimStatus",
    kind: CallKind::Realname,
    field: "accessNumbers",
    item: |st, n, m| {
        let row = st.0.fleet.network(n).map(|s| match s {
            NetworkStatus::Online => ("4", "在用"),
            NetworkStatus::Stopped => ("5", "停机"),
        });
        status_item(n, ["simStatus", "simStatusName"], "99", row, m)
    },
    wrap: |items| json!({ "simStatusList": items }),
};

/// Usage of the current month (China Standard Time): `{"accessNumber": [..]}` → `data[]
/// {accessNumber, result, unit: "MB", flowAmount, month: "YYYYMM", status, statusDesc}`; status
/// `0` 查询成功, `-1` 号码不存在. `flowAmount` is the exact decimal of the fleet's MB.
const FLOW_BY_MONTH: BatchQuery = BatchQuery {
    path: "/api/v1/batchQry/batchQryFlowByMonth",
    kind: CallKind::Usage,
    field: "accessNumber",
    item: |st, n, m| match st.0.fleet.usage(n, st.current_month()) {
        Some((month, total)) => (
            json!({
                "accessNumber": n,
                "result": "1",
                "unit": "MB",
                "flowAmount": total.to_string(),
                "month": month_string(month).replace('-', ""),
                "status": if m == Some(Malformed::UnknownStatus) { "9" } else { "0" },
                "statusDesc": "查询成功",
            }),
            true,
        ),
        None => (
            json!({
                "accessNumber": n,
                "result": "0",
                "unit": "MB",
                "flowAmount": "",
                "month": "",
                "status": "-1",
                "statusDesc": "号码不存在",
            }),
            false,
        ),
    },
    wrap: Value::Array,
};

/// The common frame of the three batch queries: admit, signature, numbers, then the query's
/// `item` per number, malformed as scripted, the list put into the answer's `data`.
async fn batch(
    st: SimState,
    q: &BatchQuery,
    headers: HeaderMap,
    query: Option<String>,
    body: Bytes,
) -> Response {
    let admitted = match open(&st, q.kind, &headers, query.as_deref(), &body).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let malformed = admitted.malformed;
    let list = match numbers(&st, &body, q.field) {
        Ok(l) => l,
        Err(r) => {
            done(&st, Outcome::BadRequest);
            return *r;
        }
    };
    let mut items = Vec::with_capacity(list.len());
    let mut any_found = list.is_empty();
    for n in &list {
        let (v, found) = (q.item)(&st, n, malformed);
        any_found |= found;
        items.push(v);
    }
    match malformed {
        Some(Malformed::DropLast) => {
            items.pop();
        }
        Some(Malformed::WrongIccid) => {
            if let Some(Value::Object(first)) = items.first_mut() {
                first.insert("accessNumber".into(), Value::String(OTHER_NUMBER.into()));
            }
        }
        _ => {}
    }
    done(&st, outcome(malformed, any_found));
    envelope(code::OK, "查询成功", (q.wrap)(items))
}

// ---------------------------------------------------------------- products

/// The card's products: `data {accessNumber, offerList[] {offerId, status, unit, usedAmount,
/// totalAmount ("" = unlimited), effDate, expDate}}`; an unknown card is code 10008.
async fn products(
    State(st): State<SimState>,
    Path(number): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let admitted = match open(&st, CallKind::Packages, &headers, q.as_deref(), b"").await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let malformed = admitted.malformed;
    let Some(packages) = st.0.fleet.packages(&number) else {
        done(&st, Outcome::NotFound);
        return envelope(
            code::NO_SUCH_NUMBER,
            "号码不存在或不属于该客户",
            Value::Null,
        );
    };
    let mut offers: Vec<Value> = packages.iter().map(offer).collect();
    let mut named = number.clone();
    match malformed {
        Some(Malformed::DropLast) => {
            offers.pop();
        }
        Some(Malformed::WrongIccid) => named = OTHER_NUMBER.into(),
        Some(Malformed::UnknownStatus) => {
            for o in &mut offers {
                o["status"] = Value::String("9".into());
            }
        }
        _ => {}
    }
    done(&st, outcome(malformed, true));
    envelope(
        code::OK,
        "查询成功",
        json!({ "accessNumber": named, "offerList": offers }),
    )
}

// ---------------------------------------------------------------- stop / resume

/// LC002 停机保号相关: `access_number`, `acctCd` (empty), `orderTypeId` 19 停机保号 / 20 停机保号复机
/// (21/22, deactivation, are not simulated: `-2`). Answers XML `RESULT`: 0 成功, -1 号码不属于该客户,
/// -2 参数错误.
async fn disabled_number(
    State(st): State<SimState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let mut number = String::new();
    let mut order = String::new();
    for pair in q.as_deref().unwrap_or("").split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "access_number" => number = v.to_owned(),
            "orderTypeId" => order = v.to_owned(),
            _ => {}
        }
    }
    let kind = match order.as_str() {
        "19" => Some(CallKind::Stop),
        "20" => Some(CallKind::Start),
        _ => None,
    };
    if let Some(k) = kind {
        st.0.fleet.count_command(&number, k);
    }
    let admitted = match open(
        &st,
        kind.unwrap_or(CallKind::Stop),
        &headers,
        q.as_deref(),
        b"",
    )
    .await
    {
        Ok(a) => a,
        Err(r) => return r,
    };
    let malformed = admitted.malformed;
    let Some(kind) = kind else {
        done(&st, Outcome::BadRequest);
        return xml(Some("-2"), "参数错误：orderTypeId", &number);
    };
    if number.is_empty() {
        done(&st, Outcome::BadRequest);
        return xml(Some("-2"), "参数错误：access_number", &number);
    }
    if st.0.fleet.set_network(&number, kind).is_none() {
        done(&st, Outcome::NotFound);
        return xml(Some("-1"), "号码不属于该客户", &number);
    }
    let resp = match malformed {
        Some(Malformed::DropLast) => xml(None, "", &number),
        Some(Malformed::WrongIccid) => xml(Some("0"), "成功", OTHER_NUMBER),
        Some(Malformed::UnknownStatus) => xml(Some("9"), "", &number),
        _ => xml(Some("0"), "成功", &number),
    };
    done(&st, outcome(malformed, true));
    resp
}
