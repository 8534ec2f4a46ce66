//! Month rollover and deltas for the carddata poll (RULES.md, "Month rollover").

use crate::{Megabytes, MonthCounters};
use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;

/// The carrier's answer to a usage query: cumulative usage of the current calendar month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonthUsage {
    /// First day of the month the total belongs to, in the deployment's time zone.
    pub month: NaiveDate,
    pub month_total_mb: Megabytes,
}

/// What one usage poll does to a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageUpdate {
    /// The counters after the poll.
    pub counters: MonthCounters,
    /// Real megabytes consumed since the previous poll (never negative).
    pub delta_mb: Megabytes,
    /// The month changed with this poll.
    pub rolled_over: bool,
    /// The carrier reported less than the baseline (a correction): the delta was clamped to 0.
    pub corrected_downwards: bool,
}

impl UsageUpdate {
    /// Whether anything must be written.
    pub fn changes(&self, before: &MonthCounters) -> bool {
        self.rolled_over || self.delta_mb > Decimal::ZERO || self.counters != *before
    }
}

/// First day of the month `day` falls in.
pub fn month_start(day: NaiveDate) -> NaiveDate {
    day.with_day(1).unwrap_or(day)
}

/// Applies a reported month total to the card's counters.
///
/// * Same month: `delta = total - last_gateway_total_mb`; a negative delta counts as 0 and resets
///   the baseline to `total`.
/// * New month (or first poll): `last_month_total_mb = current_month_usage_mb` (old),
///   `current_month_usage_mb = total`, baseline `total`, start = the reported month,
///   `delta = total`.
///
/// `reported.month` is the month of the carrier's figure, which is what the counters follow.
pub fn apply_month_total(before: &MonthCounters, reported: &MonthUsage) -> UsageUpdate {
    let month = month_start(reported.month);
    let total = reported.month_total_mb.max(Decimal::ZERO);
    if before.current_month_start_date == Some(month) {
        let raw = total - before.last_gateway_total_mb;
        let delta = raw.max(Decimal::ZERO);
        UsageUpdate {
            counters: MonthCounters {
                current_month_start_date: Some(month),
                current_month_usage_mb: before.current_month_usage_mb + delta,
                last_gateway_total_mb: total,
                last_month_total_mb: before.last_month_total_mb,
            },
            delta_mb: delta,
            rolled_over: false,
            corrected_downwards: raw < Decimal::ZERO,
        }
    } else if before.current_month_start_date.is_some_and(|m| m > month) {
        // A stale answer for a month already closed: nothing to count, nothing to move back.
        UsageUpdate {
            counters: before.clone(),
            delta_mb: Decimal::ZERO,
            rolled_over: false,
            corrected_downwards: false,
        }
    } else {
        UsageUpdate {
            counters: MonthCounters {
                current_month_start_date: Some(month),
                current_month_usage_mb: total,
                last_gateway_total_mb: total,
                last_month_total_mb: before.current_month_usage_mb,
            },
            delta_mb: total,
            rolled_over: true,
            corrected_downwards: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default()
    }

    #[test]
    fn rollover_march_to_april_with_500_mb() {
        let before = MonthCounters {
            current_month_start_date: Some(date(2026, 3, 1)),
            current_month_usage_mb: dec!(820),
            last_gateway_total_mb: dec!(820),
            last_month_total_mb: dec!(700),
        };
        let u = apply_month_total(
            &before,
            &MonthUsage {
                month: date(2026, 4, 2),
                month_total_mb: dec!(500),
            },
        );
        assert!(u.rolled_over);
        assert_eq!(u.delta_mb, dec!(500));
        assert_eq!(u.counters.last_month_total_mb, dec!(820));
        assert_eq!(u.counters.current_month_usage_mb, dec!(500));
        assert_eq!(u.counters.current_month_start_date, Some(date(2026, 4, 1)));

        // The next poll of the new month counts against the new total, never negative.
        let next = apply_month_total(
            &u.counters,
            &MonthUsage {
                month: date(2026, 4, 1),
                month_total_mb: dec!(530),
            },
        );
        assert_eq!(next.delta_mb, dec!(30));
        assert_eq!(next.counters.current_month_usage_mb, dec!(530));
    }

    #[test]
    fn same_month_100_to_150_is_50() {
        let before = MonthCounters {
            current_month_start_date: Some(date(2026, 4, 1)),
            current_month_usage_mb: dec!(100),
            last_gateway_total_mb: dec!(100),
            last_month_total_mb: dec!(0),
        };
        let u = apply_month_total(
            &before,
            &MonthUsage {
                month: date(2026, 4, 1),
                month_total_mb: dec!(150),
            },
        );
        assert_eq!(u.delta_mb, dec!(50));
        assert_eq!(u.counters.current_month_usage_mb, dec!(150));
        assert_eq!(u.counters.last_gateway_total_mb, dec!(150));
        assert!(!u.rolled_over);
    }

    #[test]
    fn carrier_correction_clamps_and_rebases() {
        let before = MonthCounters {
            current_month_start_date: Some(date(2026, 4, 1)),
            current_month_usage_mb: dec!(150),
            last_gateway_total_mb: dec!(150),
            last_month_total_mb: dec!(0),
        };
        let u = apply_month_total(
            &before,
            &MonthUsage {
                month: date(2026, 4, 1),
                month_total_mb: dec!(120),
            },
        );
        assert_eq!(u.delta_mb, dec!(0));
        assert!(u.corrected_downwards);
        assert_eq!(u.counters.last_gateway_total_mb, dec!(120));
        assert_eq!(u.counters.current_month_usage_mb, dec!(150));
        let again = apply_month_total(
            &u.counters,
            &MonthUsage {
                month: date(2026, 4, 1),
                month_total_mb: dec!(130),
            },
        );
        assert_eq!(again.delta_mb, dec!(10));
    }

    #[test]
    fn first_poll_and_stale_month() {
        let u = apply_month_total(
            &MonthCounters::default(),
            &MonthUsage {
                month: date(2026, 4, 1),
                month_total_mb: dec!(42),
            },
        );
        assert!(u.rolled_over);
        assert_eq!(u.delta_mb, dec!(42));
        let stale = apply_month_total(
            &u.counters,
            &MonthUsage {
                month: date(2026, 3, 1),
                month_total_mb: dec!(900),
            },
        );
        assert_eq!(stale.delta_mb, dec!(0));
        assert_eq!(stale.counters, u.counters);
        assert!(!stale.changes(&u.counters));
    }
}
