//! Normalisation at the edge: the platforms' units to exact decimal megabytes, their months to
//! ours. No float ever touches a figure: a usage answer is parsed as a decimal text.
//!
//! Conventions (each protocol's page in `docs/carriers/` says which it uses): 1 MB = 1024 KB
//! (China Mobile, China Telecom, China Unicom bill in KB of 1024 bytes), 1 MB = 1,048,576 bytes
//! for byte counts, and megabytes as the platform states them otherwise.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use domain::Megabytes;
use rust_decimal::Decimal;
use std::str::FromStr;

/// A month total no SIM card can reach (a petabyte): beyond it an answer is refused.
pub const MAX_MONTH_TOTAL_MB: Megabytes = Decimal::from_parts(1_000_000_000, 0, 0, false, 0);

/// An exact decimal from a JSON number or string as the platform wrote it (`"1024"`, `1024.5`,
/// `"1.5E+3"` is refused: no platform we know writes exponents). `None`: not a plain decimal or
/// negative.
pub fn parse_amount(text: &str) -> Option<Decimal> {
    let t = text.trim();
    if t.is_empty() || t.contains(['e', 'E']) {
        return None;
    }
    let d = Decimal::from_str(t).ok()?;
    (d >= Decimal::ZERO).then_some(d)
}

/// The same for a `serde_json::Value` (number or string), reading the number's text, never an
/// `f64`.
pub fn amount_of(v: &serde_json::Value) -> Option<Decimal> {
    match v {
        serde_json::Value::String(s) => parse_amount(s),
        serde_json::Value::Number(n) => parse_amount(&n.to_string()),
        _ => None,
    }
}

/// Kilobytes of 1024 bytes to megabytes, exactly (1/1024 has a finite decimal expansion).
pub fn kb_to_mb(kb: Decimal) -> Option<Megabytes> {
    kb.checked_div(Decimal::from(1024))
}

/// Bytes to megabytes of 1,048,576 bytes, exactly.
pub fn bytes_to_mb(bytes: Decimal) -> Option<Megabytes> {
    bytes.checked_div(Decimal::from(1_048_576))
}

/// Refuses a month total beyond what a card can use (it would stop the card on nonsense).
pub fn check_month_total(mb: Megabytes) -> Result<Megabytes, String> {
    if mb > MAX_MONTH_TOTAL_MB {
        Err(format!(
            "month total {mb} MB is beyond what a card can use ({MAX_MONTH_TOTAL_MB} MB)"
        ))
    } else {
        Ok(mb)
    }
}

/// The first day of the month `at` falls in, in time zone `tz` (`CMP_TIMEZONE`).
pub fn month_of(at: DateTime<Utc>, tz: chrono_tz::Tz) -> NaiveDate {
    let local = tz.from_utc_datetime(&at.naive_utc());
    NaiveDate::from_ymd_opt(local.year(), local.month(), 1).unwrap_or(local.date_naive())
}

/// The first day of a `YYYYMM` or `YYYY-MM` month.
pub fn parse_month(text: &str) -> Option<NaiveDate> {
    let t = text.trim();
    let (y, m) = if t.len() == 6 && t.bytes().all(|b| b.is_ascii_digit()) {
        (&t[..4], &t[4..])
    } else {
        let (y, m) = t.split_once('-')?;
        if y.len() != 4 || m.len() != 2 {
            return None;
        }
        (y, m)
    };
    NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn units_convert_exactly() {
        assert_eq!(kb_to_mb(dec!(1024)), Some(dec!(1)));
        assert_eq!(kb_to_mb(dec!(1)), Some(dec!(0.0009765625)));
        assert_eq!(bytes_to_mb(dec!(1572864)), Some(dec!(1.5)));
        // Summing converted figures loses nothing: 3 × 1 KB = 3 KB.
        let one = kb_to_mb(dec!(1)).unwrap();
        assert_eq!(one + one + one, kb_to_mb(dec!(3)).unwrap());
    }

    #[test]
    fn amounts_are_read_as_text() {
        assert_eq!(parse_amount("1024.50"), Some(dec!(1024.50)));
        assert_eq!(parse_amount("-1"), None);
        assert_eq!(parse_amount("1e3"), None);
        assert_eq!(parse_amount("abc"), None);
        let v: serde_json::Value = serde_json::from_str("0.1").unwrap();
        assert_eq!(amount_of(&v), Some(dec!(0.1)));
    }

    #[test]
    fn months_map_to_our_zone() {
        let tz = chrono_tz::Asia::Shanghai;
        // 2026-02-28 17:00 UTC is 2026-03-01 01:00 in Shanghai.
        let at = Utc.with_ymd_and_hms(2026, 2, 28, 17, 0, 0).unwrap();
        assert_eq!(
            month_of(at, tz),
            NaiveDate::from_ymd_opt(2026, 3, 1).unwrap()
        );
        assert_eq!(parse_month("202602"), NaiveDate::from_ymd_opt(2026, 2, 1));
        assert_eq!(parse_month("2026-02"), NaiveDate::from_ymd_opt(2026, 2, 1));
        assert_eq!(parse_month("2026-2"), None);
    }
}
