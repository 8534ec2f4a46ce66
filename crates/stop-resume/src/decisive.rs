//! Which polls may stop or resume a card: the ones a carrier's budget should serve first.
//!
//! When a quota lets only part of the due polls through, the dispatch takes these before the
//! rest of the backlog (`polling:decisive:{type}`, see `polling_queue`'s `decisive.rs`). A poll
//! is decisive when the fact it reads is the one the decision table is waiting on:
//!
//! | type | the card | why |
//! | --- | --- | --- |
//! | carddata | running, its valid packages limited and at least 90 % used | the next usage may exhaust them: stop (`traffic_exhausted`) |
//! | realname | not real-named (and not stopped by an operator) | a verification resumes it |
//! | package | stopped for `no_package` or `traffic_exhausted` | a new package resumes it |
//! | protect | never | it asks the carrier nothing: the budget does not hold it back |
//!
//! The mark is a hint for ordering only: a wrong one costs a place in the line, never a poll
//! out of its time.

use chrono::{DateTime, Utc};
use domain::{Card, Megabytes, PackageUsage, StopReason, TaskType};
use rust_decimal::Decimal;

/// The share of the allowance left at which a running card's usage poll becomes decisive.
pub const NEAR_LIMIT_LEFT: Decimal = Decimal::from_parts(1, 0, 0, false, 1);

/// Whether the next poll of `task` of `card` may stop or resume it (the table above).
/// `packages`: the card's packages as the usage poll read them (only carddata looks at them;
/// `None` there: not read, not decisive).
pub fn decisive_poll(
    task: TaskType,
    card: &Card,
    packages: Option<&[PackageUsage]>,
    now: DateTime<Utc>,
) -> bool {
    match task {
        TaskType::Carddata => {
            card.stop_reason.is_none() && packages.is_some_and(|p| near_limit(p, now))
        }
        TaskType::Realname => {
            !card.real_name_satisfied() && card.stop_reason != Some(StopReason::Manual)
        }
        TaskType::Package => matches!(
            card.stop_reason,
            Some(StopReason::NoPackage | StopReason::TrafficExhausted)
        ),
        TaskType::Protect => false,
    }
}

/// The valid packages all have a limit and at most [`NEAR_LIMIT_LEFT`] of their summed
/// allowance is left (none valid, or one unlimited: not near).
fn near_limit(packages: &[PackageUsage], now: DateTime<Utc>) -> bool {
    let mut limit = Megabytes::ZERO;
    let mut used = Megabytes::ZERO;
    let mut any = false;
    for p in packages.iter().filter(|p| p.is_valid_at(now)) {
        let Some(l) = p.spec.data_limit_mb else {
            return false;
        };
        any = true;
        limit += l;
        used += p.spec.used_mb.min(l);
    }
    any && limit - used <= limit * NEAR_LIMIT_LEFT
}
