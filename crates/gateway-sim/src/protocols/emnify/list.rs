//! `GET /api/v1/sim`: the SIM list, filtered and paged.

use super::super::Malformed;
use super::ids::find_by;
use super::wire::{error, shown_status, sim_object, validation};
use super::{OTHER_ICCID, P, Refused, ended, enter, finish};
use crate::SimState;
use crate::stats::Outcome;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use gateway::CallKind;
use serde::Deserialize;
#[derive(Debug, Deserialize)]
pub(super) struct ListQuery {
    q: Option<String>,
    page: Option<String>,
    per_page: Option<String>,
    sort: Option<String>,
}

/// `GET /api/v1/sim`: the list, filtered by `q` (`iccid`, `iccid_with_luhn`, `id`), paged by
/// `page` (from 1) and `per_page` (default 2000, at most the account's `page_size_max`); paging
/// metadata in the headers, as the conventions say.
pub(super) async fn list_sims(
    State(st): State<SimState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Response {
    let (_guard, malformed) = match enter(&st, CallKind::Realname, &headers).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    let (page, per_page) = match paging(&q, st.account(P).page_size_max) {
        Ok(p) => p,
        Err(resp) => return *ended(&st, Outcome::BadRequest, resp),
    };
    let (iccids, total): (Vec<String>, usize) = match q.q.as_deref().filter(|s| !s.is_empty()) {
        Some(filter) => {
            let mut found: Option<Option<String>> = None;
            for crit in filter.split(',') {
                let Some((field, value)) = crit
                    .split_once(':')
                    .filter(|(field, _)| matches!(*field, "iccid" | "iccid_with_luhn" | "id"))
                else {
                    return ended(&st, Outcome::BadRequest, invalid_query(crit));
                };
                let this = find_by(&st, field, value);
                // Several criteria: all must name the same card.
                found = Some(match found {
                    None => this,
                    Some(prev) => prev.filter(|p| this.as_deref() == Some(p.as_str())),
                });
            }
            let hit: Vec<String> = found.flatten().into_iter().collect();
            let n = hit.len();
            (
                hit.into_iter()
                    .skip((page - 1).saturating_mul(per_page))
                    .take(per_page)
                    .collect(),
                n,
            )
        }
        None => {
            let (cards, total) =
                st.0.fleet
                    .list((page - 1).saturating_mul(per_page), per_page, None);
            (cards.into_iter().map(|c| c.iccid).collect(), total)
        }
    };
    let mut items: Vec<serde_json::Value> = iccids
        .iter()
        .filter_map(|i| {
            let network = st.0.fleet.network(i)?;
            let named = if malformed == Some(Malformed::WrongIccid) {
                OTHER_ICCID
            } else {
                i.as_str()
            };
            Some(sim_object(named, shown_status(network, malformed)))
        })
        .collect();
    if malformed == Some(Malformed::DropLast) {
        items.pop();
    }
    let mut resp = axum::Json(serde_json::Value::Array(items)).into_response();
    let pages = total.div_ceil(per_page).max(1);
    for (name, value) in [
        ("x-count-per-page", per_page),
        ("x-current-page", page),
        ("x-total-count", total),
        ("x-total-pages", pages),
    ] {
        resp.headers_mut().insert(name, HeaderValue::from(value));
    }
    finish(&st, malformed, resp)
}

/// `page` and `per_page` of the query; `Err`: the 422 that refuses them or the sort.
fn paging(q: &ListQuery, max: usize) -> Result<(usize, usize), Refused> {
    let parse = |v: &Option<String>, default: usize| -> Result<usize, Refused> {
        match v {
            None => Ok(default),
            Some(s) => s
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| Box::new(validation(format!("Invalid paging parameter {s}")))),
        }
    };
    let page = parse(&q.page, 1)?;
    let per_page = parse(&q.per_page, 2000.min(max))?;
    if per_page > max {
        let msg = format!("per_page {per_page} is above the maximum {max}");
        return Err(Box::new(validation(msg)));
    }
    if let Some(sort) = &q.sort {
        let field = sort.trim_start_matches(['+', '-']);
        if !matches!(field, "id" | "iccid") {
            return Err(Box::new(error(
                StatusCode::UNPROCESSABLE_ENTITY,
                1302,
                "InvalidSortCriteria",
                format!("Sort criteria {sort} is invalid"),
            )));
        }
    }
    Ok((page, per_page))
}

fn invalid_query(crit: &str) -> Response {
    error(
        StatusCode::UNPROCESSABLE_ENTITY,
        1301,
        "InvalidQueryCriteria",
        format!("Search criteria {crit} is invalid"),
    )
}
