//! The status changes: one card (`change/sim-status`), and a batch (`change/sim-status/batch`),
//! a job whose result `query/sim-batch-result` answers.

use super::P;
use super::request::{Admitted, batch_cards, one_card, open, param};
use super::wire::{
    Answer, Fail, NO_CARD_MESSAGE, bad_oper, code, fail, no_card, ok, outcome, single, spoil,
    undocumented,
};
use crate::SimState;
use crate::protocols::Malformed;
use crate::stats::Outcome;
use domain::NetworkStatus;
use gateway::CallKind;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

/// `operType` as the call's words for stop and for start.
fn oper(q: &HashMap<String, String>, stop: &str, start: &str) -> Option<CallKind> {
    match param(q, "operType") {
        Some(w) if w == stop => Some(CallKind::Stop),
        Some(w) if w == start => Some(CallKind::Start),
        _ => None,
    }
}

fn target_of(kind: CallKind) -> NetworkStatus {
    if kind == CallKind::Stop {
        NetworkStatus::Stopped
    } else {
        NetworkStatus::Online
    }
}

/// Counts the change `oper` of each of `cards` (before any fault, as every stop/start request
/// naming the card), then admits the request.
async fn open_change<'a>(
    st: &SimState,
    q: &HashMap<String, String>,
    oper: Option<CallKind>,
    cards: impl Iterator<Item = &'a str>,
) -> Result<Admitted, Fail> {
    if let Some(kind) = oper {
        for iccid in cards {
            st.0.fleet.count_command(iccid, kind);
        }
    }
    open(st, oper.unwrap_or(CallKind::Stop), q).await
}

static ORDERS: AtomicU64 = AtomicU64::new(1);

/// `operType` of the single change: `0` stop (已激活 → 已停机), `1` resume (已停机 → 已激活). The
/// other documented values (lifecycle moves out of inventory or test) are not simulated.
pub(super) async fn change(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let oper = oper(q, "0", "1");
    let a = open_change(st, q, oper, param(q, "iccid").into_iter()).await?;
    let iccid = one_card(q)?;
    let kind = oper.ok_or_else(bad_oper)?;
    if a.malformed == Some(Malformed::UnknownStatus) {
        return Err(undocumented());
    }
    let now = st.0.fleet.network(&iccid).ok_or_else(no_card)?;
    if now == target_of(kind) {
        return Err(fail(
            Outcome::BadRequest,
            code::STATE,
            "当前卡状态不允许办理该业务",
        ));
    }
    if let Err(left) = st.0.accounts.take_change_lock(P, &iccid) {
        return Err(fail(
            Outcome::BadRequest,
            code::LOCKED,
            &format!("同一号码在限制时间内不能重复办理该业务，请{left}秒后再试"),
        ));
    }
    st.0.fleet.set_network(&iccid, kind);
    let order = format!("{:020}", ORDERS.fetch_add(1, Ordering::SeqCst));
    Ok(single(json!({ "orderNum": order }), a.malformed))
}

// ---------------------------------------------------------------- batch change and its job

/// One batch job's results: (iccid, status, message) per card, and how often it was asked for.
#[derive(Debug)]
struct Job {
    results: Vec<(String, &'static str, &'static str)>,
    polls: u32,
}

/// Jobs of every simulator of the process, by number (ids are unique process-wide); the oldest
/// are forgotten beyond [`MAX_JOBS`].
static JOBS: LazyLock<Mutex<BTreeMap<u64, Job>>> = LazyLock::new(|| Mutex::new(BTreeMap::new()));
static JOB_IDS: AtomicU64 = AtomicU64::new(1);
const MAX_JOBS: usize = 10_000;

/// The batch change: `operType` `9` 已激活 → 已停机, `11` 已停机 → 已激活. Refuses the whole call
/// when one card changed within the lock window (as documented: the others fail with it). The
/// cards before the locked one keep their lock record here (the accounts have no
/// look-without-taking); the platform would not record them.
pub(super) async fn change_batch(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let oper = oper(q, "9", "11");
    let named = param(q, "iccids")
        .into_iter()
        .flat_map(|raw| raw.split('_'));
    let a = open_change(st, q, oper, named.filter(|s| !s.is_empty())).await?;
    let cards = batch_cards(st, q)?;
    let kind = oper.ok_or_else(bad_oper)?;
    if param(q, "reason").is_none() {
        return Err(fail(
            Outcome::BadRequest,
            code::PARAM,
            "停复机原因reason必填",
        ));
    }
    if a.malformed == Some(Malformed::UnknownStatus) {
        return Err(undocumented());
    }
    let target = target_of(kind);
    let changing: Vec<&String> = cards
        .iter()
        .filter(|c| st.0.fleet.network(c).is_some_and(|n| n != target))
        .collect();
    for iccid in &changing {
        if let Err(left) = st.0.accounts.take_change_lock(P, iccid) {
            return Err(fail(
                Outcome::BadRequest,
                code::LOCKED,
                &format!("号码{iccid}在限制时间内已办理过该业务，请{left}秒后再试"),
            ));
        }
    }
    let mut results = Vec::with_capacity(cards.len());
    for iccid in &cards {
        let r = match st.0.fleet.network(iccid) {
            None => (iccid.clone(), code::NO_CARD, NO_CARD_MESSAGE),
            Some(n) if n == target => (iccid.clone(), code::STATE, "当前卡状态不允许办理该业务"),
            Some(_) => {
                st.0.fleet.set_network(iccid, kind);
                (iccid.clone(), code::OK, "成功")
            }
        };
        results.push(r);
    }
    let id = JOB_IDS.fetch_add(1, Ordering::SeqCst);
    {
        let mut jobs = JOBS.lock().unwrap_or_else(|p| p.into_inner());
        while jobs.len() >= MAX_JOBS {
            jobs.pop_first();
        }
        jobs.insert(id, Job { results, polls: 0 });
    }
    Ok((
        outcome(a.malformed, Outcome::Ok),
        ok(vec![json!({ "jobId": id.to_string() })]),
    ))
}

/// The first query of a job answers it in progress (`jobStatus` `1`); later ones `2` (all done)
/// or `3` (done, some cards failed) with `resultList` (`resultType` `2`: `resultId` is an ICCID).
pub(super) async fn batch_result(st: &SimState, q: &HashMap<String, String>) -> Answer {
    let a = open(st, CallKind::Realname, q).await?;
    let Some(id) = param(q, "jobId").and_then(|s| s.parse::<u64>().ok()) else {
        return Err(fail(Outcome::BadRequest, code::PARAM, "缺少参数jobId"));
    };
    let mut jobs = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let Some(job) = jobs.get_mut(&id) else {
        return Err(fail(Outcome::NotFound, code::NO_JOB, "任务不存在"));
    };
    job.polls += 1;
    if job.polls == 1 {
        return Ok((Outcome::Ok, ok(vec![json!({ "jobStatus": "1" })])));
    }
    let mut list: Vec<Value> = job
        .results
        .iter()
        .map(|(iccid, status, message)| {
            json!({ "resultType": "2", "resultId": iccid, "status": status, "message": message })
        })
        .collect();
    let all_ok = job.results.iter().all(|(_, s, _)| *s == code::OK);
    drop(jobs);
    spoil(&mut list, a.malformed, "resultId");
    let job_status = match a.malformed {
        Some(Malformed::UnknownStatus) => "7",
        _ if all_ok => "2",
        _ => "3",
    };
    Ok((
        outcome(a.malformed, Outcome::Ok),
        ok(vec![json!({ "jobStatus": job_status, "resultList": list })]),
    ))
}
