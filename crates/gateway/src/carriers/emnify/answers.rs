//! The statistics and data quota answers in our words.

use super::super::units;
use super::Emnify;
use super::wire::{QuotaAnswer, figure, id_of, quota_status_of, timestamp};
use crate::{AnswerFault, GatewayError};
use domain::{CarrierPackage, MonthUsage};
use rust_decimal::Decimal;
use serde_json::Value;

impl Emnify {
    /// `current_month.data` of the statistics answer of SIM `id`.
    pub(super) fn month_usage(&self, id: u64, v: &Value) -> Result<MonthUsage, GatewayError> {
        let now_month = units::month_of(self.clock.now(), self.timezone);
        // The reference shows the statistics both as an object and as a one-item array.
        let obj = match v {
            Value::Array(items) => items.first(),
            other => Some(other),
        }
        .and_then(Value::as_object)
        .filter(|o| {
            ["current_month", "last_month", "last_hour"]
                .iter()
                .any(|k| o.contains_key(*k))
        })
        .ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("usage of SIM {id}: the statistics answer holds no period"),
            )
        })?;
        // "current_month is only included if traffic exists": none yet this month.
        let Some(data) = obj
            .get("current_month")
            .and_then(|c| c.get("data"))
            .filter(|d| !d.is_null())
        else {
            return Ok(MonthUsage {
                month: now_month,
                month_total_mb: Decimal::ZERO,
            });
        };
        if let Some(sim_id) = data.get("sim_id").filter(|s| !s.is_null())
            && figure(sim_id) != Some(Decimal::from(id))
        {
            return Err(self.http.fault(
                AnswerFault::WrongIccid,
                format!("usage of SIM {id} answered for SIM {sim_id}"),
            ));
        }
        if let Some(unit) = data
            .get("traffic_type")
            .and_then(|t| t.get("unit"))
            .and_then(Value::as_str)
            && !unit.eq_ignore_ascii_case("MB")
        {
            return Err(self.http.fault(
                AnswerFault::BadValue,
                format!("usage of SIM {id}: data in `{unit}`, not MB"),
            ));
        }
        let volume = match data.get("volume") {
            None | Some(Value::Null) => {
                return Err(self.http.fault(
                    AnswerFault::MissingField,
                    format!("usage of SIM {id}: current_month.data has no volume"),
                ));
            }
            Some(v) => figure(v).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage of SIM {id}: volume {v} is not a non-negative decimal"),
                )
            })?,
        };
        let volume = units::check_month_total(volume)
            .map_err(|e| self.http.fault(AnswerFault::BadValue, e))?;
        let month = match data.get("month").and_then(Value::as_str) {
            Some(m) => m.get(..7).and_then(units::parse_month).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage of SIM {id}: month `{m}` is no date"),
                )
            })?,
            None => now_month,
        };
        Ok(MonthUsage {
            month,
            month_total_mb: volume,
        })
    }

    pub(super) fn package_of(
        &self,
        endpoint: u64,
        quota: &QuotaAnswer,
    ) -> Result<CarrierPackage, GatewayError> {
        let status_id = id_of(&quota.status.id);
        let (status, word) = status_id.and_then(quota_status_of).ok_or_else(|| {
            self.http.fault(
                AnswerFault::UnknownStatus,
                format!(
                    "data quota of endpoint {endpoint} has status {}, outside the documented table",
                    quota.status.id
                ),
            )
        })?;
        if let Some(d) = &quota.status.description
            && !d.eq_ignore_ascii_case(word)
        {
            return Err(self.http.fault(
                AnswerFault::UnknownStatus,
                format!(
                    "data quota of endpoint {endpoint}: status {} is `{d}`, the table says `{word}`",
                    quota.status.id
                ),
            ));
        }
        let bad = |what: &str, v: &Value| {
            self.http.fault(
                AnswerFault::BadValue,
                format!(
                    "data quota of endpoint {endpoint}: {what} {v} is not a non-negative decimal"
                ),
            )
        };
        let left = match &quota.volume {
            Value::Null => {
                return Err(self.http.fault(
                    AnswerFault::MissingField,
                    format!("data quota of endpoint {endpoint} has no volume"),
                ));
            }
            v => figure(v).ok_or_else(|| bad("volume", v))?,
        };
        let added = match &quota.last_volume_added {
            Value::Null => None,
            v => Some(figure(v).ok_or_else(|| bad("last_volume_added", v))?),
        };
        let limit = added.map(|a| a.max(left));
        let used = limit.map_or(Decimal::ZERO, |l| l - left);
        let expires_at = match &quota.expiry_date {
            Value::Null => None,
            Value::String(s) => Some(timestamp(s).ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("data quota of endpoint {endpoint}: expiry_date `{s}` is no time"),
                )
            })?),
            other => {
                return Err(self.http.fault(
                    AnswerFault::BadValue,
                    format!("data quota of endpoint {endpoint}: expiry_date {other} is no time"),
                ));
            }
        };
        Ok(CarrierPackage {
            external_id: format!("data-quota:{endpoint}"),
            status,
            used_mb: used,
            limit_mb: limit,
            activated_at: None,
            expires_at,
        })
    }
}
