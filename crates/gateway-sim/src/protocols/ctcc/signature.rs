//! The gateway's signature: `AppKey`, `Timestamp` (`yyyyMMddHHmmss`) and `Sign`, recomputed with
//! the account's secret over the sorted query and the raw body by the client's own
//! [`ctcc_sign`], so the two sides cannot disagree on the algorithm.

use super::P;
use super::wire::{code, gateway_refusal};
use crate::SimState;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::NaiveDateTime;
use gateway::carriers::ctcc_sign;

/// The raw query's `k=v` pairs sorted by key, joined by `&` (as sent, not decoded).
pub(super) fn sorted_query(raw: Option<&str>) -> String {
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
pub(super) fn check_signature(
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
    let refuse = |code: i64, msg: &str| {
        Err(Box::new(gateway_refusal(
            StatusCode::UNAUTHORIZED,
            code,
            msg,
        )))
    };
    let app_key = h("AppKey");
    if app_key.is_empty() || !st.0.accounts.credential_is(P, "app_key", app_key) {
        return refuse(code::APP_KEY, "AppKey 不存在或已停用");
    }
    let ts = h("Timestamp");
    if ts.len() != 14 || NaiveDateTime::parse_from_str(ts, "%Y%m%d%H%M%S").is_err() {
        return refuse(code::TIMESTAMP, "Timestamp 格式错误");
    }
    let secret = st.0.accounts.credential(P, "secret").unwrap_or_default();
    let expected = ctcc_sign(
        &sorted_query(raw_query),
        &String::from_utf8_lossy(body),
        &secret,
        ts,
    );
    if !h("Sign").eq_ignore_ascii_case(&expected) {
        return refuse(code::SIGN, "签名校验失败");
    }
    Ok(())
}
