//! Month rollover and deltas for the carddata poll (`docs/rules.md`, "Month rollover").

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
/// * Same month: `raw = total - last_gateway_total_mb`.
///   - `raw < 0` (a carrier correction): nothing counts, the baseline resets to `total`,
///     `streamed_ahead_mb` is kept.
///   - otherwise the rise first pays off what the push stream already counted:
///     `delta = max(raw - streamed_ahead_mb, 0)`, `streamed_ahead_mb -= min(raw,
///     streamed_ahead_mb)`, `current_month_usage_mb += delta`, baseline `total`.
/// * New month (or first poll): `last_month_total_mb = current_month_usage_mb` (old),
///   `current_month_usage_mb = total`, baseline `total`, start = the reported month,
///   `delta = total`, `streamed_ahead_mb = 0` (what was ahead belonged to the closed month).
///
/// `reported.month` is the month of the carrier's figure, which is what the counters follow.
///
/// **Streamed and polled usage, counted once** (see [`apply_streamed`]): within a month,
/// `current_month_usage_mb = last_gateway_total_mb + streamed_ahead_mb` (plus what corrections
/// left), whatever the order in which pushed records and polled totals arrive. A pushed record
/// counts at once and raises `streamed_ahead_mb`; a poll whose total already includes the
/// session counts nothing for it, and a total that lags counts only what it shows beyond the
/// streamed megabytes, the rest staying ahead until a later total catches up. Without a stream
/// `streamed_ahead_mb` stays 0 and these are the same-month and new-month rules alone.
pub fn apply_month_total(before: &MonthCounters, reported: &MonthUsage) -> UsageUpdate {
    let month = month_start(reported.month);
    let total = reported.month_total_mb.max(Decimal::ZERO);
    if before.current_month_start_date == Some(month) {
        let raw = total - before.last_gateway_total_mb;
        let rise = raw.max(Decimal::ZERO);
        let paid_off = rise.min(before.streamed_ahead_mb);
        let delta = rise - paid_off;
        UsageUpdate {
            counters: MonthCounters {
                current_month_start_date: Some(month),
                current_month_usage_mb: before.current_month_usage_mb + delta,
                last_gateway_total_mb: total,
                last_month_total_mb: before.last_month_total_mb,
                streamed_ahead_mb: before.streamed_ahead_mb - paid_off,
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
                streamed_ahead_mb: Decimal::ZERO,
            },
            delta_mb: total,
            rolled_over: true,
            corrected_downwards: false,
        }
    }
}

/// Applies one record of a carrier's push stream (`mb` used in a session that ended in
/// `month`, the deployment's calendar) to the card's counters. `None`: the record belongs to a
/// month already closed, and nothing is counted (the closed month's figure is the carrier's
/// total as last polled; a late record of it is not added to the new month).
///
/// * Same month: `delta = mb`, `current_month_usage_mb += mb`, `streamed_ahead_mb += mb`; the
///   baseline `last_gateway_total_mb` is the carrier's total and only a poll moves it.
/// * New month (or the card's first figure): `last_month_total_mb = current_month_usage_mb`
///   (old), `current_month_usage_mb = mb`, baseline 0 (no total of the new month seen yet),
///   `streamed_ahead_mb = mb`, start = `month`, `delta = mb`.
///
/// The next poll of the month then counts its total's rise beyond `streamed_ahead_mb` only
/// ([`apply_month_total`]): every megabyte counted once, whether the carrier's total already
/// includes the streamed session or lags behind it.
pub fn apply_streamed(
    before: &MonthCounters,
    month: NaiveDate,
    mb: Megabytes,
) -> Option<UsageUpdate> {
    let month = month_start(month);
    let mb = mb.max(Decimal::ZERO);
    match before.current_month_start_date {
        Some(current) if current == month => Some(UsageUpdate {
            counters: MonthCounters {
                current_month_usage_mb: before.current_month_usage_mb + mb,
                streamed_ahead_mb: before.streamed_ahead_mb + mb,
                ..before.clone()
            },
            delta_mb: mb,
            rolled_over: false,
            corrected_downwards: false,
        }),
        Some(current) if current > month => None,
        _ => Some(UsageUpdate {
            counters: MonthCounters {
                current_month_start_date: Some(month),
                current_month_usage_mb: mb,
                last_gateway_total_mb: Decimal::ZERO,
                last_month_total_mb: before.current_month_usage_mb,
                streamed_ahead_mb: mb,
            },
            delta_mb: mb,
            rolled_over: true,
            corrected_downwards: false,
        }),
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
            streamed_ahead_mb: dec!(0),
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
            streamed_ahead_mb: dec!(0),
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
            streamed_ahead_mb: dec!(0),
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

    fn april(usage: &str, baseline: &str, ahead: &str) -> MonthCounters {
        MonthCounters {
            current_month_start_date: Some(date(2026, 4, 1)),
            current_month_usage_mb: usage.parse().unwrap_or_default(),
            last_gateway_total_mb: baseline.parse().unwrap_or_default(),
            last_month_total_mb: dec!(0),
            streamed_ahead_mb: ahead.parse().unwrap_or_default(),
        }
    }

    fn polled(before: &MonthCounters, total: Decimal) -> UsageUpdate {
        apply_month_total(
            before,
            &MonthUsage {
                month: date(2026, 4, 1),
                month_total_mb: total,
            },
        )
    }

    #[test]
    fn a_streamed_session_the_poll_already_includes_counts_once() {
        let before = april("100", "100", "0");
        let pushed = apply_streamed(&before, date(2026, 4, 9), dec!(30)).unwrap();
        assert_eq!(pushed.delta_mb, dec!(30));
        assert_eq!(pushed.counters.current_month_usage_mb, dec!(130));
        assert_eq!(pushed.counters.last_gateway_total_mb, dec!(100));
        assert_eq!(pushed.counters.streamed_ahead_mb, dec!(30));
        // The carrier's total includes the 30 MB and 5 MB more.
        let poll = polled(&pushed.counters, dec!(135));
        assert_eq!(poll.delta_mb, dec!(5));
        assert_eq!(poll.counters.current_month_usage_mb, dec!(135));
        assert_eq!(poll.counters.streamed_ahead_mb, dec!(0));
    }

    #[test]
    fn a_lagging_total_counts_nothing_twice() {
        let before = april("100", "100", "0");
        let pushed = apply_streamed(&before, date(2026, 4, 9), dec!(30)).unwrap();
        // The total lags: it shows 10 MB of something, not yet the 30 MB session.
        let lag = polled(&pushed.counters, dec!(110));
        assert_eq!(lag.delta_mb, dec!(0));
        assert_eq!(lag.counters.current_month_usage_mb, dec!(130));
        assert_eq!(lag.counters.streamed_ahead_mb, dec!(20));
        // Unchanged total: nothing.
        let same = polled(&lag.counters, dec!(110));
        assert_eq!(same.delta_mb, dec!(0));
        // It catches up (100 + 30 + 10 = 140) and 2 MB more.
        let caught = polled(&same.counters, dec!(142));
        assert_eq!(caught.delta_mb, dec!(12));
        assert_eq!(caught.counters.current_month_usage_mb, dec!(142));
        assert_eq!(caught.counters.streamed_ahead_mb, dec!(0));
        // Counted in all: 30 + 0 + 0 + 12 = 42 = the total's rise.
        assert_eq!(
            pushed.delta_mb + lag.delta_mb + same.delta_mb + caught.delta_mb,
            dec!(42)
        );
    }

    #[test]
    fn a_stream_opens_the_month_and_closed_months_count_nothing() {
        let march = MonthCounters {
            current_month_start_date: Some(date(2026, 3, 1)),
            current_month_usage_mb: dec!(820),
            last_gateway_total_mb: dec!(820),
            last_month_total_mb: dec!(700),
            streamed_ahead_mb: dec!(3),
        };
        let first = apply_streamed(&march, date(2026, 4, 1), dec!(2.5)).unwrap();
        assert!(first.rolled_over);
        assert_eq!(first.counters.last_month_total_mb, dec!(820));
        assert_eq!(first.counters.current_month_usage_mb, dec!(2.5));
        assert_eq!(first.counters.last_gateway_total_mb, dec!(0));
        assert_eq!(first.counters.streamed_ahead_mb, dec!(2.5));
        // The April total includes the session: nothing new.
        let poll = polled(&first.counters, dec!(2.5));
        assert_eq!(poll.delta_mb, dec!(0));
        assert!(!poll.rolled_over);
        assert_eq!(poll.counters.streamed_ahead_mb, dec!(0));
        // A late March record: closed.
        assert_eq!(
            apply_streamed(&poll.counters, date(2026, 3, 31), dec!(9)),
            None
        );
        // A poll rolling over drops what was ahead in the closed month.
        let rolled = apply_month_total(
            &march,
            &MonthUsage {
                month: date(2026, 4, 1),
                month_total_mb: dec!(5),
            },
        );
        assert_eq!(rolled.counters.streamed_ahead_mb, dec!(0));
        assert_eq!(rolled.delta_mb, dec!(5));
    }

    #[test]
    fn a_correction_keeps_what_is_ahead() {
        let before = april("130", "100", "30");
        let corrected = polled(&before, dec!(90));
        assert!(corrected.corrected_downwards);
        assert_eq!(corrected.delta_mb, dec!(0));
        assert_eq!(corrected.counters.last_gateway_total_mb, dec!(90));
        assert_eq!(corrected.counters.streamed_ahead_mb, dec!(30));
    }
}
