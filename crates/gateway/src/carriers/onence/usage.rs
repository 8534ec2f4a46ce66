//! The usage records and the data quota as our figures.

use super::super::units::{amount_of, check_month_total};
use super::wire::{QuotaAnswer, month_bounds, parse_time, signed_amount};
use super::{DATA_QUOTA_ID, OneNce};
use crate::{AnswerFault, GatewayError};
use chrono::NaiveDate;
use domain::{CarrierPackage, Megabytes, PackageStatus};
use rust_decimal::Decimal;
use serde_json::Value;

impl OneNce {
    /// The exact sum of the `stats` records dated in `month`.
    pub(super) fn month_usage(
        &self,
        iccid: &str,
        month: NaiveDate,
        stats: &[Value],
    ) -> Result<Megabytes, GatewayError> {
        let fault = |kind, what: String| self.http.fault(kind, format!("usage of {iccid}: {what}"));
        let (first, last) = month_bounds(month);
        let mut total = Decimal::ZERO;
        for rec in stats {
            let date = rec.get("date").and_then(Value::as_str).ok_or_else(|| {
                fault(
                    AnswerFault::MissingField,
                    "a record without date".to_owned(),
                )
            })?;
            let day = date
                .get(..10)
                .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
                .ok_or_else(|| fault(AnswerFault::BadValue, format!("date `{date}`")))?;
            if day < first || day > last {
                continue;
            }
            let data = rec.get("data").filter(|d| d.is_object()).ok_or_else(|| {
                fault(
                    AnswerFault::MissingField,
                    format!("the record of {day} has no data"),
                )
            })?;
            if let Some(unit) = data
                .get("traffic_type")
                .and_then(|t| t.get("unit"))
                .and_then(Value::as_str)
                && !unit.eq_ignore_ascii_case("MB")
            {
                return Err(fault(
                    AnswerFault::BadValue,
                    format!("data unit `{unit}`, expected MB"),
                ));
            }
            let volume = data.get("volume").filter(|v| !v.is_null()).ok_or_else(|| {
                fault(
                    AnswerFault::MissingField,
                    format!("the record of {day} has no data.volume"),
                )
            })?;
            let mb = amount_of(volume).ok_or_else(|| {
                fault(
                    AnswerFault::BadValue,
                    format!("data.volume {volume} of {day} is no plain non-negative decimal"),
                )
            })?;
            total = total
                .checked_add(mb)
                .ok_or_else(|| fault(AnswerFault::BadValue, "the sum overflows".to_owned()))?;
        }
        check_month_total(total).map_err(|e| fault(AnswerFault::BadValue, e))
    }

    /// The SIM's data quota as its one package.
    pub(super) fn package_of(
        &self,
        iccid: &str,
        q: &QuotaAnswer,
    ) -> Result<CarrierPackage, GatewayError> {
        let fault = |kind, what: String| self.http.fault(kind, format!("quota of {iccid}: {what}"));
        let amount = |name: &str, v: &Option<Value>| -> Result<Decimal, GatewayError> {
            let v = v
                .as_ref()
                .filter(|v| !v.is_null())
                .ok_or_else(|| fault(AnswerFault::MissingField, format!("no {name}")))?;
            signed_amount(v).ok_or_else(|| {
                fault(
                    AnswerFault::BadValue,
                    format!("{name} {v} is no plain decimal"),
                )
            })
        };
        let left = amount("volume", &q.volume)?;
        let total = amount("total_volume", &q.total_volume)?;
        let used = total - left;
        if total < Decimal::ZERO || used < Decimal::ZERO {
            return Err(fault(
                AnswerFault::BadValue,
                format!("volume {left} of total_volume {total}"),
            ));
        }
        let expires_at = match q.expiry_date.as_deref().filter(|s| !s.trim().is_empty()) {
            None => None,
            Some(text) => Some(
                parse_time(text)
                    .ok_or_else(|| fault(AnswerFault::BadValue, format!("expiry_date `{text}`")))?,
            ),
        };
        let stated = q
            .status
            .as_ref()
            .and_then(|s| s.get("description"))
            .and_then(Value::as_str);
        let status = match stated {
            Some(word) if word.eq_ignore_ascii_case("EXPIRED") => PackageStatus::Expired,
            Some(word)
                if word.eq_ignore_ascii_case("ACTIVE")
                    || word.eq_ignore_ascii_case("EXHAUSTED") =>
            {
                PackageStatus::Active
            }
            Some(word) => {
                return Err(fault(
                    AnswerFault::UnknownStatus,
                    format!("status `{word}`"),
                ));
            }
            None if expires_at.is_some_and(|e| e <= self.clock.now()) => PackageStatus::Expired,
            None => PackageStatus::Active,
        };
        Ok(CarrierPackage {
            external_id: DATA_QUOTA_ID.to_owned(),
            status,
            used_mb: used,
            limit_mb: Some(total),
            activated_at: None,
            expires_at,
        })
    }
}
