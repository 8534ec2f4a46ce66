//! Calendar arithmetic in the deployment's zone (`CMP_TIMEZONE`): month steps anchored on a
//! day of the month, day steps on the local calendar. Pure: the store computes what it writes
//! with these, so the rules live (and are tested) in one place.
//!
//! A monthly reset is anchored on the day of the month it was first due (the anchor) and at
//! the local time of day it is due. Each month's date is the anchor clamped to that month's
//! length, computed from the anchor every time, never from the previous (clamped) date: anchor
//! 31 gives Jan 31 → Feb 28 (29) → Mar 31 → Apr 30, not Mar 28.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};

/// Days of `month` (1..=12) of `year` (proleptic Gregorian).
pub fn days_in_month(year: i32, month: u32) -> u32 {
    let (next_year, next_month) = if month >= 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    match (
        NaiveDate::from_ymd_opt(year, month, 1),
        NaiveDate::from_ymd_opt(next_year, next_month, 1),
    ) {
        (Some(first), Some(next)) => u32::try_from((next - first).num_days()).unwrap_or(31),
        _ => 31,
    }
}

/// The day of the month of `at` on the local calendar of `tz`.
pub fn local_day<Z: TimeZone>(at: DateTime<Utc>, tz: &Z) -> u32 {
    at.with_timezone(tz).day()
}

/// The instant of a local date and time in `tz`. An ambiguous time (clocks going back) is its
/// earlier instant; a time that does not exist (clocks going forward) moves forward to the
/// first local time that exists, so a step never lands before the wall-clock time asked.
pub fn local_instant<Z: TimeZone>(local: NaiveDateTime, tz: &Z) -> DateTime<Utc> {
    let mut probe = local;
    // Gaps are at most a few hours; 15-minute steps find the end of any real one.
    for _ in 0..(4 * 24) {
        if let Some(at) = tz.from_local_datetime(&probe).earliest() {
            return at.with_timezone(&Utc);
        }
        probe += Duration::minutes(15);
    }
    local.and_utc()
}

/// The local date `months` months after `(year, month)`, on `anchor_day` clamped to that
/// month's length.
fn anchored_date(year: i32, month: u32, months: u32, anchor_day: u32) -> Option<NaiveDate> {
    let index = i64::from(year) * 12 + i64::from(month.clamp(1, 12) - 1) + i64::from(months);
    let target_year = i32::try_from(index.div_euclid(12)).ok()?;
    let target_month = u32::try_from(index.rem_euclid(12)).ok()? + 1;
    let day = anchor_day
        .clamp(1, 31)
        .min(days_in_month(target_year, target_month));
    NaiveDate::from_ymd_opt(target_year, target_month, day)
}

/// `months` months after `from` on the local calendar of `tz`: the month of `from` plus
/// `months`, on `anchor_day` clamped to that month, at the local time of day of `from`.
pub fn add_months_anchored<Z: TimeZone>(
    from: DateTime<Utc>,
    months: u32,
    anchor_day: u32,
    tz: &Z,
) -> DateTime<Utc> {
    let local = from.with_timezone(tz).naive_local();
    match anchored_date(local.year(), local.month(), months, anchor_day) {
        Some(date) => local_instant(date.and_time(local.time()), tz),
        None => from,
    }
}

/// The next monthly reset after one due at `due`: the first anchored month boundary after
/// `now` (at least one month after `due`). After downtime this skips every boundary already
/// passed, so a package is reset once, not once per missed month.
pub fn next_monthly_reset<Z: TimeZone>(
    due: DateTime<Utc>,
    anchor_day: u32,
    now: DateTime<Utc>,
    tz: &Z,
) -> DateTime<Utc> {
    let local_due = due.with_timezone(tz).naive_local();
    let local_now = now.with_timezone(tz).naive_local();
    let months_between = (i64::from(local_now.year()) - i64::from(local_due.year())) * 12
        + i64::from(local_now.month())
        - i64::from(local_due.month());
    // Start one month before the month of `now` (the boundary of that month may still be
    // ahead), never before the month after `due`.
    let mut months = u32::try_from(months_between.saturating_sub(1).max(1)).unwrap_or(1);
    loop {
        let candidate = add_months_anchored(due, months, anchor_day, tz);
        if candidate > now || months >= 12 * 1000 {
            return candidate;
        }
        months += 1;
    }
}

/// `days` days after `from` on the local calendar of `tz`, at the same local time of day
/// (`duration_days` of a package: a day across a daylight-saving change is 23 or 25 hours).
pub fn add_days_local<Z: TimeZone>(from: DateTime<Utc>, days: u32, tz: &Z) -> DateTime<Utc> {
    let local = from.with_timezone(tz).naive_local();
    match local
        .date()
        .checked_add_days(chrono::Days::new(u64::from(days)))
    {
        Some(date) => local_instant(date.and_time(local.time()), tz),
        None => from,
    }
}

/// Local midnight starting the month of `at` in `tz` (the calendar month a usage figure is
/// counted in).
pub fn local_month_start<Z: TimeZone>(at: DateTime<Utc>, tz: &Z) -> DateTime<Utc> {
    let local = at.with_timezone(tz).naive_local();
    match NaiveDate::from_ymd_opt(local.year(), local.month(), 1) {
        Some(first) => local_instant(first.and_time(NaiveTime::MIN), tz),
        None => at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::Asia::Shanghai;
    use chrono_tz::Europe::Berlin;

    fn sh(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
        local_instant(
            NaiveDate::from_ymd_opt(y, m, d)
                .and_then(|date| date.and_hms_opt(h, min, 0))
                .unwrap_or_default(),
            &Shanghai,
        )
    }

    fn utc(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, 0, 0)
            .single()
            .unwrap_or_default()
    }

    /// One month after `from` on the Shanghai calendar, on `anchor` clamped to that month.
    fn next_month(from: DateTime<Utc>, anchor: u32) -> DateTime<Utc> {
        add_months_anchored(from, 1, anchor, &Shanghai)
    }

    /// Each `(from, anchor, expected)`: one anchored month after `from` is `expected`.
    fn assert_next_months(cases: &[(DateTime<Utc>, u32, DateTime<Utc>)]) {
        for &(from, anchor, expected) in cases {
            assert_eq!(
                next_month(from, anchor),
                expected,
                "from {from}, anchor {anchor}"
            );
        }
    }

    #[test]
    fn month_lengths_with_leap_years() {
        assert_eq!(days_in_month(2026, 1), 31);
        assert_eq!(days_in_month(2026, 2), 28);
        assert_eq!(days_in_month(2028, 2), 29);
        assert_eq!(days_in_month(2100, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(2026, 4), 30);
        assert_eq!(days_in_month(2026, 12), 31);
    }

    #[test]
    fn anchor_31_clamps_per_month_and_never_drifts() {
        let jan31 = sh(2027, 1, 31, 0, 0);
        let steps: Vec<DateTime<Utc>> = (1..=4)
            .map(|k| add_months_anchored(jan31, k, 31, &Shanghai))
            .collect();
        assert_eq!(
            steps,
            vec![
                sh(2027, 2, 28, 0, 0),
                sh(2027, 3, 31, 0, 0),
                sh(2027, 4, 30, 0, 0),
                sh(2027, 5, 31, 0, 0)
            ]
        );
        // Chained from the clamped date with the anchor, March is the 31st again.
        assert_eq!(next_month(sh(2027, 2, 28, 0, 0), 31), sh(2027, 3, 31, 0, 0));
    }

    #[test]
    fn leap_february_is_the_29th() {
        assert_next_months(&[
            (sh(2028, 1, 31, 9, 30), 31, sh(2028, 2, 29, 9, 30)),
            (sh(2028, 2, 29, 9, 30), 30, sh(2028, 3, 30, 9, 30)),
            (sh(2028, 1, 29, 0, 0), 29, sh(2028, 2, 29, 0, 0)),
            (sh(2027, 1, 29, 0, 0), 29, sh(2027, 2, 28, 0, 0)),
        ]);
    }

    #[test]
    fn day_31_to_a_30_day_month() {
        assert_next_months(&[
            (sh(2026, 3, 31, 0, 0), 31, sh(2026, 4, 30, 0, 0)),
            (sh(2026, 8, 31, 0, 0), 31, sh(2026, 9, 30, 0, 0)),
        ]);
    }

    #[test]
    fn december_goes_to_january_of_the_next_year() {
        // The reproduced bug: 2026-12-01 00:00 Shanghai is 2026-11-30 16:00 UTC; a month
        // added in UTC gives 2026-12-30 16:00 UTC = 2026-12-31 00:00 Shanghai.
        let due = sh(2026, 12, 1, 0, 0);
        assert_eq!(due, utc(2026, 11, 30, 16));
        let next = next_month(due, 1);
        assert_eq!(next, sh(2027, 1, 1, 0, 0));
        assert_eq!(next, utc(2026, 12, 31, 16));
        assert_eq!(
            next_month(sh(2026, 12, 31, 0, 0), 31),
            sh(2027, 1, 31, 0, 0)
        );
    }

    #[test]
    fn shanghai_midnight_is_not_utc_midnight() {
        // The same instant is the 1st in Shanghai and the 30th in UTC.
        let due = sh(2026, 12, 1, 0, 0);
        assert_eq!(local_day(due, &Shanghai), 1);
        assert_eq!(local_day(due, &Utc), 30);
        // Anchored in UTC the same reset is on the 30th of each month at 16:00.
        assert_eq!(add_months_anchored(due, 1, 30, &Utc), utc(2026, 12, 30, 16));
        assert_eq!(
            local_month_start(utc(2026, 11, 30, 17), &Shanghai),
            sh(2026, 12, 1, 0, 0)
        );
        assert_eq!(
            local_month_start(utc(2026, 11, 30, 15), &Shanghai),
            sh(2026, 11, 1, 0, 0)
        );
    }

    #[test]
    fn next_reset_is_the_first_boundary_after_now() {
        let due = sh(2027, 1, 31, 0, 0);
        // On time: one month.
        assert_eq!(
            next_monthly_reset(due, 31, due, &Shanghai),
            sh(2027, 2, 28, 0, 0)
        );
        // After downtime (now = Apr 10): the boundaries of Feb 28 and Mar 31 passed; the next
        // one is Apr 30, on the anchor, not a drifted Apr 28.
        let now = sh(2027, 4, 10, 12, 0);
        assert_eq!(
            next_monthly_reset(due, 31, now, &Shanghai),
            sh(2027, 4, 30, 0, 0)
        );
        // Exactly on a boundary: that one counts as passed.
        assert_eq!(
            next_monthly_reset(due, 31, sh(2027, 3, 31, 0, 0), &Shanghai),
            sh(2027, 4, 30, 0, 0)
        );
        // A boundary later in the month of `now` is still ahead.
        assert_eq!(
            next_monthly_reset(sh(2026, 1, 20, 8, 0), 20, sh(2026, 6, 3, 0, 0), &Shanghai),
            sh(2026, 6, 20, 8, 0)
        );
        // Years of downtime.
        assert_eq!(
            next_monthly_reset(sh(2020, 2, 29, 0, 0), 29, sh(2026, 2, 1, 0, 0), &Shanghai),
            sh(2026, 2, 28, 0, 0)
        );
    }

    #[test]
    fn days_follow_the_local_calendar_across_dst() {
        // Berlin springs forward on 2026-03-29: 10 local days are 239 hours.
        let from = local_instant(
            NaiveDate::from_ymd_opt(2026, 3, 25)
                .and_then(|d| d.and_hms_opt(12, 0, 0))
                .unwrap_or_default(),
            &Berlin,
        );
        let to = add_days_local(from, 10, &Berlin);
        assert_eq!((to - from).num_hours(), 239);
        assert_eq!(
            to.with_timezone(&Berlin).naive_local().time().to_string(),
            "12:00:00"
        );
        // Shanghai has no DST: 30 days are 720 hours.
        let from = sh(2026, 11, 20, 10, 0);
        assert_eq!(add_days_local(from, 30, &Shanghai), sh(2026, 12, 20, 10, 0));
    }

    #[test]
    fn a_local_time_in_a_dst_gap_moves_forward() {
        let gap = NaiveDate::from_ymd_opt(2026, 3, 29)
            .and_then(|d| d.and_hms_opt(2, 30, 0))
            .unwrap_or_default();
        let at = local_instant(gap, &Berlin);
        assert_eq!(
            at.with_timezone(&Berlin).naive_local().time().to_string(),
            "03:00:00"
        );
    }
}
