//! Which polls may stop or resume a card: the ones a carrier's budget should serve first.
//!
//! When a quota lets only part of the due polls through, the dispatch takes these before the
//! rest of the backlog (`polling:decisive:{type}`, see `polling_queue`'s `decisive.rs`). A poll
//! is decisive when the fact it reads is the one the decision table is waiting on:
//!
//! | type | the card | why |
//! | --- | --- | --- |
//! | carddata | running, its valid packages limited and at least 90 % used, or with less left than the poll just counted | the next usage may exhaust them: stop (`traffic_exhausted`) |
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

/// What a usage poll read that tells whether the next one is decisive.
#[derive(Debug, Clone, Copy, Default)]
pub struct UsageReading<'a> {
    /// The card's packages after the poll's deduction (`None`: not read: not decisive).
    pub packages: Option<&'a [PackageUsage]>,
    /// Megabytes the poll counted (its delta): at the same pace the next poll counts as much
    /// again, so a card with less left than that will likely cross its limit by then.
    pub counted_mb: Megabytes,
}

/// Whether the next poll of `task` of `card` may stop or resume it (the table above).
/// `usage`: what the usage poll read (only carddata looks at it).
pub fn decisive_poll(
    task: TaskType,
    card: &Card,
    usage: UsageReading<'_>,
    now: DateTime<Utc>,
) -> bool {
    match task {
        TaskType::Carddata => {
            card.stop_reason.is_none()
                && usage
                    .packages
                    .is_some_and(|p| near_limit(p, usage.counted_mb, now))
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
/// allowance is left, or no more than `pace` (none valid, or one unlimited: not near).
fn near_limit(packages: &[PackageUsage], pace: Megabytes, now: DateTime<Utc>) -> bool {
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
    let left = limit - used;
    any && (left <= limit * NEAR_LIMIT_LEFT || left <= pace)
}
