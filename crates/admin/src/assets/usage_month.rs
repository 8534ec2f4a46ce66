//! `GET /cards/{id}/usage?month=YYYY-MM`: a card's usage over one month of the deployment's
//! calendar (`CMP_TIMEZONE`), by hour, for the card page's chart against its packages' limits.
//! Bounded: at most [`MAX_HOURS`] rows, one index range scan of the card's records.

use crate::error::StoreResultExt;
use crate::{Admin, AdminError};
use chrono::{DateTime, Datelike, Duration as ChronoDuration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use domain::{CardId, UsageHour};
use serde::{Deserialize, Serialize};

/// The hours of the longest month (31 days, plus the hour a DST change may add).
pub const MAX_HOURS: u32 = 31 * 24 + 1;

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthUsage {
    pub card_id: CardId,
    /// `YYYY-MM`, a month of `timezone`'s calendar.
    pub month: String,
    /// `CMP_TIMEZONE`, the calendar the month is taken in.
    pub timezone: String,
    /// The month's first instant.
    pub from: DateTime<Utc>,
    /// The next month's first instant.
    pub to: DateTime<Utc>,
    /// The card's usage records grouped by hour, oldest first; hours without a record are
    /// absent.
    pub hours: Vec<UsageHour>,
}

/// The first instant of a local day: its midnight, or the first hour after a DST gap.
fn day_start(tz: Tz, day: NaiveDate) -> Option<DateTime<Utc>> {
    (0..3).find_map(|h| {
        let local = day.and_hms_opt(h, 0, 0)?;
        tz.from_local_datetime(&local)
            .earliest()
            .map(|t| t.with_timezone(&Utc))
    })
}

/// Years a month may name: no usage is older than 1970, and the month after 9998-12 still has
/// a four-digit year, so both bounds of the answer are RFC 3339 date-times.
const YEARS: std::ops::RangeInclusive<i32> = 1970..=9998;

/// The first days of `YYYY-MM` and of the month after it.
pub(crate) fn parse_month(month: &str) -> Result<(NaiveDate, NaiveDate), AdminError> {
    let bad = || {
        AdminError::invalid(
            "/month",
            "must be a month `YYYY-MM` from 1970-01 to 9998-12",
        )
    };
    let (y, m) = month.split_once('-').ok_or_else(bad)?;
    if y.len() != 4 || m.len() != 2 {
        return Err(bad());
    }
    let year: i32 = y.parse().map_err(|_| bad())?;
    if !YEARS.contains(&year) {
        return Err(bad());
    }
    let mon: u32 = m.parse().map_err(|_| bad())?;
    let first = NaiveDate::from_ymd_opt(year, mon, 1).ok_or_else(bad)?;
    let next = if mon == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, mon + 1, 1)
    }
    .ok_or_else(bad)?;
    Ok((first, next))
}

impl Admin {
    /// The card's usage over `month` (default: the current month of `CMP_TIMEZONE`).
    pub async fn month_usage(
        &self,
        id: CardId,
        month: Option<&str>,
    ) -> Result<MonthUsage, AdminError> {
        let tz = self.timezone;
        let month = match month {
            Some(m) => m.to_owned(),
            None => {
                let now = self.clock.now().with_timezone(&tz);
                format!("{:04}-{:02}", now.year(), now.month())
            }
        };
        let (first, next) = parse_month(&month)?;
        let out_of_range = || AdminError::invalid("/month", "is out of range");
        let from = day_start(tz, first).ok_or_else(out_of_range)?;
        let to = day_start(tz, next).ok_or_else(out_of_range)?;
        debug_assert!(to - from <= ChronoDuration::hours(i64::from(MAX_HOURS)));
        self.card(id).await?;
        let hours = self
            .stores
            .usage_history
            .usage_hours(id, from, to, MAX_HOURS)
            .await
            .admin()?;
        Ok(MonthUsage {
            card_id: id,
            month,
            timezone: tz.name().to_owned(),
            from,
            to,
            hours,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{day_start, parse_month};
    use chrono::{NaiveDate, TimeZone, Utc};

    #[test]
    fn months_parse_strictly() {
        let d = |y, m| NaiveDate::from_ymd_opt(y, m, 1).unwrap();
        assert_eq!(parse_month("2026-12").unwrap(), (d(2026, 12), d(2027, 1)));
        assert_eq!(parse_month("2026-02").unwrap(), (d(2026, 2), d(2026, 3)));
        assert_eq!(parse_month("1970-01").unwrap(), (d(1970, 1), d(1970, 2)));
        assert_eq!(parse_month("9998-12").unwrap(), (d(9998, 12), d(9999, 1)));
        for bad in [
            "2026-13", "2026-1", "26-01", "2026/01", "", "2026-00", "x-01", "2026-1x", "0000-01",
            "1969-12", "9999-12", "+202-01",
        ] {
            assert!(parse_month(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_month_starts_at_local_midnight() {
        let day = NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
        assert_eq!(
            day_start(chrono_tz::Asia::Shanghai, day).unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 30, 16, 0, 0).unwrap()
        );
        // America/Santiago springs forward at midnight (2026-09-06 00:00 -04 is 01:00 -03):
        // the day starts at its first hour that exists.
        let gap = NaiveDate::from_ymd_opt(2026, 9, 6).unwrap();
        assert_eq!(
            day_start(chrono_tz::America::Santiago, gap).unwrap(),
            Utc.with_ymd_and_hms(2026, 9, 6, 4, 0, 0).unwrap()
        );
    }
}
