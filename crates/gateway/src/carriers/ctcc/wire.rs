//! What the platform answers and how it is read: the envelope and its codes, the status tables
//! of cards and offers, the units and dates, and the signature and query encoding.

use super::super::transport::Answer;
use super::super::units::{amount_of, check_month_total, kb_to_mb, parse_month};
use super::Ctcc;
use crate::{AnswerFault, GatewayError};
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use domain::{CarrierPackage, Megabytes, MonthUsage, NetworkStatus, PackageStatus, RealNameStatus};
use md5::{Digest, Md5};
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::Value;

/// The envelope codes the adapter knows (`code` of every JSON answer).
mod code {
    pub(super) const OK: i64 = 0;
    /// AppKey unknown or disabled, signature wrong, timestamp refused.
    pub(super) const AUTH: [i64; 3] = [10001, 10002, 10003];
    pub(super) const THROTTLED: i64 = 10004;
    /// Parameter error, too many numbers.
    pub(super) const REFUSED: [i64; 2] = [10006, 10007];
    pub(super) const NO_SUCH_NUMBER: i64 = 10008;
}

/// China Standard Time, in which the platform writes its months and dates.
const CST_SECS: i32 = 8 * 3600;

#[derive(Debug, Deserialize)]
pub(super) struct Envelope {
    code: Value,
    #[serde(default)]
    msg: Option<String>,
    #[serde(default)]
    data: Value,
}

impl Ctcc {
    /// The HTTP-level outcome: throttling, refused signature, 5xx, other non-success.
    pub(super) fn check_http(&self, answer: &Answer) -> Result<(), GatewayError> {
        match answer.status {
            200..=299 => Ok(()),
            429 => Err(GatewayError::Throttled {
                retry_after: answer.retry_after(),
            }),
            401 | 403 => Err(GatewayError::Auth(format!(
                "the 5GCMP gateway refused the signed request (HTTP {}): {}",
                answer.status,
                self.http.excerpt(answer)
            ))),
            status => Err(GatewayError::Carrier {
                status,
                body: self.http.excerpt(answer),
            }),
        }
    }

    /// The envelope's `data` of a success, or the code's meaning.
    pub(super) fn envelope(&self, what: &str, answer: &Answer) -> Result<Value, GatewayError> {
        self.check_http(answer)?;
        let env: Envelope = self.http.json(what, answer)?;
        self.data_of(what, answer, env)
    }

    pub(super) fn data_of(
        &self,
        what: &str,
        answer: &Answer,
        env: Envelope,
    ) -> Result<Value, GatewayError> {
        let code = match &env.code {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }
        .ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("{what}: code {} is no integer", env.code),
            )
        })?;
        let msg = self.http.scrub(env.msg.as_deref().unwrap_or(""));
        match code {
            code::OK => Ok(env.data),
            c if code::AUTH.contains(&c) => Err(GatewayError::Auth(format!(
                "the 5GCMP gateway refused the signed request (code {c}): {msg}"
            ))),
            code::THROTTLED => Err(GatewayError::Throttled {
                retry_after: answer.retry_after(),
            }),
            code::NO_SUCH_NUMBER => Err(GatewayError::NotFound),
            c if code::REFUSED.contains(&c) => Err(GatewayError::Carrier {
                status: answer.status,
                body: format!("code {c}: {msg}"),
            }),
            c => Err(self
                .http
                .fault(AnswerFault::UnknownCode, format!("{what}: code {c}: {msg}"))),
        }
    }

    /// `what` (a status and its value) is not in the platform's table.
    fn off_table(&self, what: String) -> GatewayError {
        self.http.fault(
            AnswerFault::UnknownStatus,
            format!("{what} is not in the table"),
        )
    }

    pub(super) fn parse_realname(&self, item: &Value) -> Result<RealNameStatus, GatewayError> {
        match text_of(item, "status").as_deref() {
            Some("1") => Ok(RealNameStatus::Verified),
            Some("0") => Ok(RealNameStatus::NotVerified),
            Some("-1") => Err(GatewayError::NotFound),
            other => Err(self.off_table(format!("realname: status {other:?}"))),
        }
    }

    pub(super) fn parse_network(&self, item: &Value) -> Result<NetworkStatus, GatewayError> {
        match text_of(item, "simStatus").as_deref() {
            // 可激活, 测试激活, 在用: the card may use the network.
            Some("1" | "2" | "4") => Ok(NetworkStatus::Online),
            // 测试去激活, 停机, 运营商管理状态, 拆机.
            Some("3" | "5" | "6" | "7") => Ok(NetworkStatus::Stopped),
            Some("-1") => Err(GatewayError::NotFound),
            other => Err(self.off_table(format!("network status: simStatus {other:?}"))),
        }
    }

    pub(super) fn parse_usage(&self, item: &Value) -> Result<MonthUsage, GatewayError> {
        match text_of(item, "status").as_deref() {
            Some("0") => {}
            Some("-1") => return Err(GatewayError::NotFound),
            other => return Err(self.off_table(format!("usage: status {other:?}"))),
        }
        let amount = item.get("flowAmount").ok_or_else(|| {
            self.http
                .fault(AnswerFault::MissingField, "usage: no flowAmount")
        })?;
        let figure = amount_of(amount).ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("usage: flowAmount {amount} is not a plain non-negative decimal"),
            )
        })?;
        let unit = text_of(item, "unit").unwrap_or_default();
        let mb = to_mb(figure, &unit)
            .ok_or_else(|| {
                self.http.fault(
                    AnswerFault::BadValue,
                    format!("usage: unit {unit:?} is not MB, KB or GB"),
                )
            })
            .and_then(|mb| {
                check_month_total(mb).map_err(|e| {
                    self.http
                        .fault(AnswerFault::BadValue, format!("usage: {e}"))
                })
            })?;
        let month_text = text_of(item, "month").ok_or_else(|| {
            self.http
                .fault(AnswerFault::MissingField, "usage: no month")
        })?;
        let month = parse_month(&month_text).ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("usage: month {month_text:?} is not YYYYMM"),
            )
        })?;
        Ok(MonthUsage {
            month,
            month_total_mb: mb,
        })
    }

    pub(super) fn parse_offer(&self, o: &Value) -> Result<CarrierPackage, GatewayError> {
        let external_id = text_of(o, "offerId")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                self.http.fault(
                    AnswerFault::MissingField,
                    "packages: an offer without offerId",
                )
            })?;
        let status = match text_of(o, "status").as_deref() {
            Some("0") => PackageStatus::Pending,
            Some("1") => PackageStatus::Active,
            Some("2") => PackageStatus::Expired,
            Some("3") => PackageStatus::Cancelled,
            other => {
                return Err(
                    self.off_table(format!("packages: offer {external_id} status {other:?}"))
                );
            }
        };
        let unit = text_of(o, "unit").unwrap_or_else(|| "MB".to_owned());
        let amount = |field: &str, required: bool| -> Result<Option<Megabytes>, GatewayError> {
            match o.get(field) {
                None | Some(Value::Null) if !required => Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() && !required => Ok(None),
                Some(v) => amount_of(v)
                    .and_then(|d| to_mb(d, &unit))
                    .map(Some)
                    .ok_or_else(|| {
                        self.http.fault(
                            AnswerFault::BadValue,
                            format!(
                                "packages: offer {external_id} {field} {v} in {unit:?} is no amount"
                            ),
                        )
                    }),
                None => Err(self.http.fault(
                    AnswerFault::MissingField,
                    format!("packages: offer {external_id} has no {field}"),
                )),
            }
        };
        let used_mb = amount("usedAmount", true)?.unwrap_or(Decimal::ZERO);
        let limit_mb = amount("totalAmount", false)?;
        let date = |field: &str| -> Result<Option<DateTime<Utc>>, GatewayError> {
            match text_of(o, field).map(|s| s.trim().to_owned()) {
                None => Ok(None),
                Some(s) if s.is_empty() => Ok(None),
                Some(s) => cst_datetime(&s).map(Some).ok_or_else(|| {
                    self.http.fault(
                        AnswerFault::BadValue,
                        format!(
                            "packages: offer {external_id} {field} {s:?} is not yyyy-MM-dd HH:mm:ss"
                        ),
                    )
                }),
            }
        };
        let activated_at = date("effDate")?;
        let expires_at = date("expDate")?;
        Ok(CarrierPackage {
            external_id,
            status,
            used_mb,
            limit_mb,
            activated_at,
            expires_at,
        })
    }
}

/// `Sign` of a China Telecom gateway request: MD5 of `query + body + secret + timestamp` as
/// lower-case hex, its ASCII bytes hex-encoded again, upper-cased (64 characters, all digits).
/// Public for gateway-sim, which checks the requests it gets with it; the documented example
/// pins it (`sign_follows_the_documented_example`).
pub fn sign(sorted_query: &str, body: &str, secret: &str, timestamp: &str) -> String {
    let mut h = Md5::new();
    h.update(sorted_query.as_bytes());
    h.update(body.as_bytes());
    h.update(secret.as_bytes());
    h.update(timestamp.as_bytes());
    let lower: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    lower.bytes().map(|b| format!("{b:02X}")).collect()
}

/// Percent-encodes all but the unreserved characters of RFC 3986.
pub(super) fn encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A field as text, whether the platform wrote a string or a number.
fn text_of(v: &Value, field: &str) -> Option<String> {
    match v.get(field)? {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An amount in the platform's unit as exact megabytes (1 MB = 1024 KB, 1 GB = 1024 MB).
pub(super) fn to_mb(figure: Decimal, unit: &str) -> Option<Megabytes> {
    match unit.trim().to_ascii_uppercase().as_str() {
        "MB" | "M" => Some(figure),
        "KB" | "K" => kb_to_mb(figure),
        "GB" | "G" => figure.checked_mul(Decimal::from(1024)),
        _ => None,
    }
}

/// `yyyy-MM-dd HH:mm:ss` in China Standard Time.
pub(super) fn cst_datetime(s: &str) -> Option<DateTime<Utc>> {
    let local = NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").ok()?;
    let tz = chrono::FixedOffset::east_opt(CST_SECS)?;
    tz.from_local_datetime(&local)
        .single()
        .map(|t| t.with_timezone(&Utc))
}
