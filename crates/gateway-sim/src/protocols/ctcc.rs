//! China Telecom 5GCMP (天翼物联 5G 连接管理平台, CMP 5G), as its API gateway
//! (`https://cmp-api.ctwing.cn:20164`) answers; `docs/carriers/ctcc-5gcmp.md` is the page, with
//! what the public material confirms and what is assumed.
//!
//! Every request is signed, there is no token: headers `AppKey`, `Timestamp`
//! (`yyyyMMddHHmmss`) and `Sign` = the hexadecimal of the ASCII of the lower-case hexadecimal MD5
//! of `sorted query + raw body + secret + timestamp`, upper-cased (the gateway's `SignUtil.signMD5`
//! rule, document section 1.2.3.1). The simulator recomputes it with the account's secret.
//!
//! | path | call | kind |
//! | --- | --- | --- |
//! | `POST /api/v1/realName/qryRealNameStatus` | BQ019 batch real-name status | realname |
//! | `POST /api/v1/prod/batchQrySimStatus` | BQ020 batch SIM status | realname (a card query) |
//! | `POST /api/v1/batchQry/batchQryFlowByMonth` | batch usage of the month | usage |
//! | `GET /api/v1/prod/qryProdInstInfo/{access_number}` | products (offers) of a card | packages |
//! | `GET /5gcmp/openapi/v1/common/disabledNumberService` | LC002 stop/resume (19/20) | stop, start |

use super::{Malformed, Refusal, admit, done, month_string};
use crate::SimState;
use crate::routes::{Injected, retry_after_secs};
use crate::stats::Outcome;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{FixedOffset, NaiveDateTime};
use domain::{CarrierPackage, CarrierProtocol, NetworkStatus, PackageStatus, RealNameStatus};
use gateway::CallKind;
use md5::{Digest, Md5};
use serde::Deserialize;
use serde_json::{Value, json};

const P: CarrierProtocol = CarrierProtocol::Ctcc5gcmp;

/// The gateway's and the platform's codes (`code` of the JSON envelope).
mod code {
    pub(super) const OK: i64 = 0;
    pub(super) const APP_KEY: i64 = 10001;
    pub(super) const SIGN: i64 = 10002;
    pub(super) const TIMESTAMP: i64 = 10003;
    pub(super) const THROTTLED: i64 = 10004;
    pub(super) const PARAM: i64 = 10006;
    pub(super) const TOO_MANY: i64 = 10007;
    pub(super) const NO_SUCH_NUMBER: i64 = 10008;
}

/// The number another card's answer is given under (`Malformed::WrongIccid`).
const OTHER_NUMBER: &str = "89860000000000000000";

pub(super) fn routes() -> Router<SimState> {
    Router::new()
        .route("/api/v1/realName/qryRealNameStatus", post(realname))
        .route("/api/v1/prod/batchQrySimStatus", post(sim_status))
        .route("/api/v1/batchQry/batchQryFlowByMonth", post(flow_by_month))
        .route(
            "/api/v1/prod/qryProdInstInfo/{access_number}",
            get(products),
        )
        .route(
            "/5gcmp/openapi/v1/common/disabledNumberService",
            get(disabled_number),
        )
}

// ---------------------------------------------------------------- signing

/// `Sign` of a request: MD5 of `query + body + secret + timestamp` as lower-case hex, whose ASCII
/// bytes are hex-encoded again and upper-cased (64 characters, all digits).
fn sign(sorted_query: &str, body: &str, secret: &str, timestamp: &str) -> String {
    let mut h = Md5::new();
    h.update(sorted_query.as_bytes());
    h.update(body.as_bytes());
    h.update(secret.as_bytes());
    h.update(timestamp.as_bytes());
    let lower: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    lower
        .bytes()
        .map(|b| format!("{b:02X}"))
        .collect::<String>()
}

/// The raw query's `k=v` pairs sorted by key, joined by `&` (as sent, not decoded).
fn sorted_query(raw: Option<&str>) -> String {
    let mut pairs: Vec<&str> = raw
        .unwrap_or("")
        .split('&')
        .filter(|s| !s.is_empty())
        .collect();
    pairs.sort_by(|a, b| {
        let ka = a.split('=').next().unwrap_or("");
        let kb = b.split('=').next().unwrap_or("");
        ka.cmp(kb)
    });
    pairs.join("&")
}

/// The gateway's check of `AppKey`, `Timestamp` and `Sign`.
fn check_signature(
    st: &SimState,
    headers: &HeaderMap,
    raw_query: Option<&str>,
    body: &[u8],
) -> Result<(), Box<Response>> {
    let h = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .unwrap_or("")
    };
    let app_key = h("AppKey");
    if app_key.is_empty() || !st.0.accounts.credential_is(P, "app_key", app_key) {
        return Err(Box::new(gateway_refusal(
            StatusCode::UNAUTHORIZED,
            code::APP_KEY,
            "AppKey 不存在或已停用",
        )));
    }
    let ts = h("Timestamp");
    if ts.len() != 14 || NaiveDateTime::parse_from_str(ts, "%Y%m%d%H%M%S").is_err() {
        return Err(Box::new(gateway_refusal(
            StatusCode::UNAUTHORIZED,
            code::TIMESTAMP,
            "Timestamp 格式错误",
        )));
    }
    let secret = st.0.accounts.credential(P, "secret").unwrap_or_default();
    let expected = sign(
        &sorted_query(raw_query),
        &String::from_utf8_lossy(body),
        &secret,
        ts,
    );
    if !h("Sign").eq_ignore_ascii_case(&expected) {
        return Err(Box::new(gateway_refusal(
            StatusCode::UNAUTHORIZED,
            code::SIGN,
            "签名校验失败",
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------- answers

fn envelope(code: i64, msg: &str, data: Value) -> Response {
    Json(json!({ "code": code, "msg": msg, "data": data })).into_response()
}

fn gateway_refusal(status: StatusCode, code: i64, msg: &str) -> Response {
    (status, Json(json!({ "code": code, "msg": msg }))).into_response()
}

fn throttled(secs: u64) -> Response {
    let mut r = gateway_refusal(
        StatusCode::TOO_MANY_REQUESTS,
        code::THROTTLED,
        "请求过于频繁，请稍后再试",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    r
}

fn html() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>系统维护</title></head><body><h1>系统维护中，请稍后访问</h1></body></html>",
    )
        .into_response()
}

/// A refusal before the request is looked at, in the gateway's words.
fn refused(st: &SimState, r: Refusal) -> Response {
    let resp = match r {
        Refusal::OverRate | Refusal::OverConcurrency => throttled(1),
        Refusal::Fault(f) => match f {
            Injected::TimedOut => {
                gateway_refusal(StatusCode::GATEWAY_TIMEOUT, 504, "Gateway Timeout")
            }
            Injected::Status(429) => throttled(retry_after_secs(st)),
            Injected::Throttled { retry_after_secs } => throttled(retry_after_secs),
            Injected::OverQuota => throttled(1),
            Injected::Unavailable => {
                gateway_refusal(StatusCode::SERVICE_UNAVAILABLE, 503, "服务暂不可用")
            }
            Injected::Status(c) => gateway_refusal(
                StatusCode::from_u16(c).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                i64::from(c),
                "系统异常",
            ),
            // Answered by the handler: a malformed success answer.
            Injected::Malformed(_) => html(),
        },
    };
    done(st, r.outcome());
    resp
}

/// Runs `admit`, keeping a scripted malformed answer for the handler.
enum Admitted {
    /// Holds the platform's concurrent place until the answer is built.
    Normal {
        _in_flight: Option<crate::accounts::InFlight>,
    },
    Malformed(Malformed),
}

async fn enter(st: &SimState, kind: CallKind) -> Result<Admitted, Response> {
    match admit(st, P, kind).await {
        Ok(g) => Ok(Admitted::Normal { _in_flight: g }),
        Err(Refusal::Fault(Injected::Malformed(m))) => Ok(Admitted::Malformed(m)),
        Err(r) => Err(refused(st, r)),
    }
}

// ---------------------------------------------------------------- batch queries

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchBody {
    #[serde(default)]
    access_number: Option<Vec<String>>,
    #[serde(default)]
    access_numbers: Option<Vec<String>>,
}

/// The numbers of a batch body (`accessNumber` of BQ019 and the usage query, `accessNumbers` of
/// BQ020), or the platform's refusal.
fn numbers(st: &SimState, body: &[u8], field: &str) -> Result<Vec<String>, Box<Response>> {
    let parsed: BatchBody = serde_json::from_slice(body).map_err(|e| {
        Box::new(envelope(
            code::PARAM,
            &format!("请求参数错误: {e}"),
            Value::Null,
        ))
    })?;
    let list = match field {
        "accessNumber" => parsed.access_number,
        _ => parsed.access_numbers,
    }
    .ok_or_else(|| {
        Box::new(envelope(
            code::PARAM,
            &format!("缺少参数 {field}"),
            Value::Null,
        ))
    })?;
    let limit = st.0.accounts.get(P).batch_limit;
    if list.len() > limit {
        return Err(Box::new(envelope(
            code::TOO_MANY,
            &format!("单次查询号码数量不能超过{limit}个"),
            Value::Null,
        )));
    }
    Ok(list)
}

/// A request as the gateway checks it.
struct Signed {
    headers: HeaderMap,
    query: Option<String>,
    body: Bytes,
}

/// The common frame of the three batch queries: admit, signature, numbers, then `item` per
/// number, malformed as scripted; `wrap` puts the list into the answer's `data`.
async fn batch(
    st: SimState,
    kind: CallKind,
    req: Signed,
    field: &str,
    item: impl Fn(&SimState, &str, Option<Malformed>) -> (Value, bool),
    wrap: impl Fn(Vec<Value>) -> Value,
) -> Response {
    let admitted = match enter(&st, kind).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let malformed = match &admitted {
        Admitted::Malformed(m) => Some(*m),
        Admitted::Normal { .. } => None,
    };
    if let Err(r) = check_signature(&st, &req.headers, req.query.as_deref(), &req.body) {
        done(&st, Outcome::BadRequest);
        return *r;
    }
    if malformed == Some(Malformed::Html) {
        done(&st, Outcome::Error);
        return html();
    }
    let list = match numbers(&st, &req.body, field) {
        Ok(l) => l,
        Err(r) => {
            done(&st, Outcome::BadRequest);
            return *r;
        }
    };
    let mut items = Vec::with_capacity(list.len());
    let mut any_found = list.is_empty();
    for n in &list {
        let (v, found) = item(&st, n, malformed);
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
    done(
        &st,
        match (malformed, any_found) {
            (Some(_), _) => Outcome::Error,
            (None, true) => Outcome::Ok,
            (None, false) => Outcome::NotFound,
        },
    );
    envelope(code::OK, "查询成功", wrap(items))
}

/// BQ019: `{"accessNumber": [..]}` → `data.statusList[] {accessNumber, status, statusDesc}`,
/// status `1` 已实名, `0` 未实名, `-1` 号码不存在.
async fn realname(
    State(st): State<SimState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    batch(
        st,
        CallKind::Realname,
        Signed {
            headers,
            query: q,
            body,
        },
        "accessNumber",
        |st, n, m| {
            let (status, desc, found) = match st.0.fleet.realname(n) {
                _ if m == Some(Malformed::UnknownStatus) => ("9", "", true),
                Some(RealNameStatus::Verified) => ("1", "已实名", true),
                Some(RealNameStatus::NotVerified) => ("0", "未实名", true),
                None => ("-1", "号码不存在", false),
            };
            (
                json!({ "accessNumber": n, "status": status, "statusDesc": desc }),
                found,
            )
        },
        |items| json!({ "statusList": items }),
    )
    .await
}

/// BQ020: `{"accessNumbers": [..]}` → `data.simStatusList[] {accessNumber, simStatus,
/// simStatusName}`: 1 可激活, 2 测试激活, 3 测试去激活, 4 在用, 5 停机, 6 运营商管理状态, 7 拆机;
/// `-1` 号码不存在. The simulated cards are 在用 (online) or 停机 (stopped).
async fn sim_status(
    State(st): State<SimState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    batch(
        st,
        CallKind::Realname,
        Signed {
            headers,
            query: q,
            body,
        },
        "accessNumbers",
        |st, n, m| {
            let (status, name, found) = match st.0.fleet.network(n) {
                _ if m == Some(Malformed::UnknownStatus) => ("99", "", true),
                Some(NetworkStatus::Online) => ("4", "在用", true),
                Some(NetworkStatus::Stopped) => ("5", "停机", true),
                None => ("-1", "号码不存在", false),
            };
            (
                json!({ "accessNumber": n, "simStatus": status, "simStatusName": name }),
                found,
            )
        },
        |items| json!({ "simStatusList": items }),
    )
    .await
}

/// Usage of the current month (China Standard Time): `{"accessNumber": [..]}` → `data[]
/// {accessNumber, result, unit: "MB", flowAmount, month: "YYYYMM", status, statusDesc}`; status
/// `0` 查询成功, `-1` 号码不存在. `flowAmount` is the exact decimal of the fleet's MB.
async fn flow_by_month(
    State(st): State<SimState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    batch(
        st,
        CallKind::Usage,
        Signed {
            headers,
            query: q,
            body,
        },
        "accessNumber",
        |st, n, m| match st.0.fleet.usage(n, st.current_month()) {
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
        Value::Array,
    )
    .await
}

// ---------------------------------------------------------------- products

fn package_status(s: PackageStatus) -> &'static str {
    match s {
        PackageStatus::Pending => "0",
        PackageStatus::Active => "1",
        PackageStatus::Expired => "2",
        PackageStatus::Cancelled => "3",
    }
}

fn beijing(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    let Some(tz) = FixedOffset::east_opt(8 * 3600) else {
        return String::new();
    };
    t.map(|t| t.with_timezone(&tz).format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

fn offer(p: &CarrierPackage) -> Value {
    json!({
        "offerId": p.external_id,
        "status": package_status(p.status),
        "unit": "MB",
        "usedAmount": p.used_mb.to_string(),
        "totalAmount": p.limit_mb.map(|l| l.to_string()).unwrap_or_default(),
        "effDate": beijing(p.activated_at),
        "expDate": beijing(p.expires_at),
    })
}

/// The card's products: `data {accessNumber, offerList[] {offerId, status, unit, usedAmount,
/// totalAmount ("" = unlimited), effDate, expDate}}`; an unknown card is code 10008.
async fn products(
    State(st): State<SimState>,
    Path(number): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let admitted = match enter(&st, CallKind::Packages).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let malformed = match &admitted {
        Admitted::Malformed(m) => Some(*m),
        Admitted::Normal { .. } => None,
    };
    if let Err(r) = check_signature(&st, &headers, q.as_deref(), b"") {
        done(&st, Outcome::BadRequest);
        return *r;
    }
    if malformed == Some(Malformed::Html) {
        done(&st, Outcome::Error);
        return html();
    }
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
    done(
        &st,
        if malformed.is_some() {
            Outcome::Error
        } else {
            Outcome::Ok
        },
    );
    envelope(
        code::OK,
        "查询成功",
        json!({ "accessNumber": named, "offerList": offers }),
    )
}

// ---------------------------------------------------------------- stop / resume

fn xml(result: Option<&str>, msg: &str, number: &str) -> Response {
    let mut body = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?><SvcCont>");
    if let Some(r) = result {
        body.push_str(&format!("<RESULT>{r}</RESULT><RESULTMSG>{msg}</RESULTMSG>"));
    }
    body.push_str(&format!(
        "<ACCESS_NUMBER>{number}</ACCESS_NUMBER><GROUP_TRANSACTIONID>1000000190{:010}</GROUP_TRANSACTIONID></SvcCont>",
        crate::wall_second() % 10_000_000_000
    ));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/xml;charset=UTF-8")],
        body,
    )
        .into_response()
}

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
    let admitted = match enter(&st, kind.unwrap_or(CallKind::Stop)).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let malformed = match &admitted {
        Admitted::Malformed(m) => Some(*m),
        Admitted::Normal { .. } => None,
    };
    if let Err(r) = check_signature(&st, &headers, q.as_deref(), b"") {
        done(&st, Outcome::BadRequest);
        return *r;
    }
    if malformed == Some(Malformed::Html) {
        done(&st, Outcome::Error);
        return html();
    }
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
    done(
        &st,
        if malformed.is_some() {
            Outcome::Error
        } else {
            Outcome::Ok
        },
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_follows_the_documented_example() {
        // The gateway document's example (1.2.3.1): query `c=3&a=1&b=2`, the JSON body, secret
        // `d1209cfefe895364e03`, timestamp `20201101021435`.
        let q = sorted_query(Some("c=3&a=1&b=2"));
        assert_eq!(q, "a=1&b=2&c=3");
        assert_eq!(
            sign(
                &q,
                r#"{"name":"xf","age":"dd"}"#,
                "d1209cfefe895364e03",
                "20201101021435"
            ),
            "3863613035653132306631333231313733383637376333326536316631643934"
        );
    }
}
