//! The wire format of the carrier gateway (`docs/carriers/cmp-json.md`), shared by
//! the client and the simulator so that the two cannot drift apart.
//!
//! Megabytes are written as decimal strings (exact) and read from strings or numbers.

use chrono::{Datelike, NaiveDate};
use domain::{CarrierPackage, Megabytes, NetworkStatus, RealNameStatus};
use serde::{Deserialize, Serialize};

/// The body of every `POST /v1/cards/*` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardRequest {
    pub iccid: String,
}

/// Answer of `POST /v1/cards/realname`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealNameAnswer {
    pub iccid: String,
    pub real_name_status: RealNameStatus,
}

/// Answer of `POST /v1/cards/usage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageAnswer {
    pub iccid: String,
    /// `YYYY-MM`, in the carrier's time zone.
    pub month: String,
    pub month_total_mb: Megabytes,
}

/// Answer of `POST /v1/cards/packages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackagesAnswer {
    pub iccid: String,
    pub packages: Vec<CarrierPackage>,
}

/// Answer of `POST /v1/cards/stop` and `POST /v1/cards/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkAnswer {
    pub iccid: String,
    pub network_status: NetworkStatus,
}

/// The body of every error answer of the simulator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}

/// `YYYY-MM` of a date.
pub fn format_month(d: NaiveDate) -> String {
    format!("{:04}-{:02}", d.year(), d.month())
}

/// The first day of a `YYYY-MM` month.
pub fn parse_month(s: &str) -> Option<NaiveDate> {
    let (y, m) = s.split_once('-')?;
    if y.len() != 4 || m.len() != 2 {
        return None;
    }
    NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_round_trip() {
        let d = NaiveDate::from_ymd_opt(2026, 4, 1).unwrap();
        assert_eq!(format_month(d), "2026-04");
        assert_eq!(parse_month("2026-04"), Some(d));
        assert_eq!(parse_month("2026-13"), None);
        assert_eq!(parse_month("2026-4"), None);
        assert_eq!(parse_month("garbage"), None);
    }

    #[test]
    fn usage_reads_numbers_and_strings() {
        let a: UsageAnswer =
            serde_json::from_str(r#"{"iccid":"1","month":"2026-04","month_total_mb":12.5}"#)
                .unwrap();
        let b: UsageAnswer =
            serde_json::from_str(r#"{"iccid":"1","month":"2026-04","month_total_mb":"12.5"}"#)
                .unwrap();
        assert_eq!(a, b);
    }
}
