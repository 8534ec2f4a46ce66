//! SIM Usage: the daily records of `GET /v1/sims/{iccid}/usage` and the data quota of
//! `GET /v1/sims/{iccid}/quota/data`.

use super::wire::{data_quota, day_record, json_answer, quota_body, raw_json, sim_error};
use super::{answered, bad_request, finish, gate, object_fault, open_card, unknown_sim};
use crate::SimState;
use crate::stats::Outcome;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{Datelike, NaiveDate};
use gateway::CallKind;
use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::{Value, json};
use std::collections::HashMap;

fn parse_day(s: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
}

/// `GET /v1/sims/{iccid}/usage?start_dt=YYYY-MM-DD&end_dt=YYYY-MM-DD`.
pub(super) async fn usage(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let pass = match gate(&st, &headers, CallKind::Usage, true).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let today = st.0.clock.now().with_timezone(&st.0.timezone).date_naive();
    let bound = |name: &str, default: NaiveDate| match q.get(name) {
        None => Ok(default),
        Some(s) => parse_day(s).ok_or_else(|| format!("{name} must be YYYY-MM-DD, got `{s}`")),
    };
    let range = bound("start_dt", today - chrono::Days::new(30))
        .and_then(|start| bound("end_dt", today).map(|end| (start, end)));
    let (start, end) = match range {
        Ok((s, e)) if s <= e => (s, e),
        Ok(_) => return bad_request(&st, "start_dt must not be after end_dt"),
        Err(e) => return bad_request(&st, e),
    };
    if st.0.fleet.view(&iccid).is_none() {
        return unknown_sim(&st, &iccid);
    }
    if let Some(resp) = object_fault(&st, pass.malformed) {
        return resp;
    }
    let Some((month, total)) = st.0.fleet.usage(&iccid, st.current_month()) else {
        return unknown_sim(&st, &iccid);
    };
    let first = NaiveDate::from_ymd_opt(month.div_euclid(12), (month.rem_euclid(12) + 1) as u32, 1)
        .unwrap_or(today);
    // The month's total as daily records: its first day and today (when today is later in the
    // same month), together exactly the total.
    let mut days = Vec::new();
    if today.year() == first.year() && today.month() == first.month() && today.day() > 1 {
        let early = (total / Decimal::TWO).round_dp_with_strategy(2, RoundingStrategy::ToZero);
        days.push((first, early));
        days.push((today, total - early));
    } else {
        days.push((first, total));
    }
    let stats: Vec<Value> = days
        .into_iter()
        .filter(|(d, _)| (start..=end).contains(d))
        .map(|(d, mb)| day_record(d, mb))
        .collect();
    answered(
        &st,
        pass.malformed,
        json_answer(StatusCode::OK, &json!({ "stats": stats })),
    )
}

/// `GET /v1/sims/{iccid}/quota/data`.
pub(super) async fn quota(
    State(st): State<SimState>,
    headers: HeaderMap,
    Path(iccid): Path<String>,
) -> Response {
    let find = |i: &str| st.0.fleet.packages(i);
    let (pass, packages) = match open_card(&st, &headers, CallKind::Packages, &iccid, find).await {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    let Some(p) = data_quota(&packages) else {
        return finish(
            &st,
            Outcome::NotFound,
            sim_error(
                StatusCode::NOT_FOUND,
                format!("No data quota found for SIM {iccid}"),
            ),
        );
    };
    answered(&st, pass.malformed, raw_json(StatusCode::OK, quota_body(p)))
}
