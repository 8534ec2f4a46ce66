//! What the platform answers: the envelope, its status codes and their errors, the status
//! tables, and the items of the queries in our types (KB → exact megabytes).

use super::OneLink;
use crate::carriers::transport::Answer;
use crate::carriers::units::{amount_of, check_month_total, kb_to_mb};
use crate::{AnswerFault, GatewayError};
use chrono::NaiveDate;
use domain::{CarrierPackage, Megabytes, MonthUsage, NetworkStatus, PackageStatus, RealNameStatus};
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// The `Retry-After` hint of a change refused by the lock: the window the simulator and our
/// default assume (the platform does not say how much of it is left).
const CHANGE_LOCK_HINT: Duration = Duration::from_secs(300);

/// When the platform's own rate limit answers: its limits are per second.
const THROTTLE_HINT: Duration = Duration::from_secs(1);

/// The envelope's `status` codes (`docs/carriers/onelink.md`, "Error codes").
pub(super) mod code {
    pub(in crate::carriers::onelink) const OK: &str = "0";
    pub(in crate::carriers::onelink) const AUTH: &str = "12001";
    pub(in crate::carriers::onelink) const TRANSID: &str = "12002";
    pub(in crate::carriers::onelink) const THROTTLED: &str = "12010";
    pub(in crate::carriers::onelink) const TOKEN: &str = "12021";
    pub(in crate::carriers::onelink) const TOO_MANY: &str = "12034";
    pub(in crate::carriers::onelink) const STATE: &str = "12035";
    pub(in crate::carriers::onelink) const LOCKED: &str = "12036";
    pub(in crate::carriers::onelink) const PARAM: &str = "12100";
    pub(in crate::carriers::onelink) const NO_JOB: &str = "12200";
    pub(in crate::carriers::onelink) const NO_CARD: &str = "11011";
}

/// The answer envelope.
#[derive(Debug, Deserialize)]
struct Envelope {
    status: Value,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    result: Option<Value>,
}

/// A decoded answer: the result list, or the platform's refusal (`status`, `message`).
pub(super) enum Reply {
    Ok(Vec<Value>),
    Refused(String, String),
}

/// A JSON string or number as text.
pub(super) fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `cardStatus` → ours. OneLink-CT: `1` 待激活, `2` 已激活, `4` 停机, `6` 可测试, `7` 库存,
/// `8` 预销户, `9` 已销户; OneLink-PB: `00` 正常, `01` 单向停机, `02` 停机, `03` 预销号,
/// `04` 销号, `07` 待激活 (`99` 号码不存在 is the unknown card). `Err(())`: outside the table.
pub(super) fn network_of_word(word: &str) -> Result<Option<NetworkStatus>, ()> {
    Ok(Some(match word {
        "2" | "00" => NetworkStatus::Online,
        // Before first use the network is open: the first session activates the card.
        "1" | "6" | "07" => NetworkStatus::Online,
        "4" | "7" | "8" | "9" | "01" | "02" | "03" | "04" => NetworkStatus::Stopped,
        "99" => return Ok(None),
        _ => return Err(()),
    }))
}

/// `realNameStatus` → ours: `0` 未实名, `1` 已实名.
pub(super) fn realname_of_word(word: &str) -> Option<RealNameStatus> {
    match word {
        "1" => Some(RealNameStatus::Verified),
        "0" => Some(RealNameStatus::NotVerified),
        _ => None,
    }
}

impl OneLink {
    // ------------------------------------------------------------ the envelope

    /// Reads an answer: throttling and HTTP failures as errors, then the envelope.
    pub(super) fn read(&self, call: &str, answer: &Answer) -> Result<Reply, GatewayError> {
        if answer.status == 429 {
            return Err(GatewayError::Throttled {
                retry_after: answer.retry_after().or(Some(THROTTLE_HINT)),
            });
        }
        if !answer.is_success() {
            return Err(GatewayError::Carrier {
                status: answer.status,
                body: self.http.excerpt(answer),
            });
        }
        let env: Envelope = self.http.json(call, answer)?;
        let Some(status) = text(Some(&env.status)) else {
            return Err(self.http.fault(
                AnswerFault::BadValue,
                format!("{call}: `status` is {}", env.status),
            ));
        };
        if status != code::OK {
            let message = env.message.unwrap_or_default();
            return Ok(Reply::Refused(status, message));
        }
        match env.result {
            None | Some(Value::Null) => Ok(Reply::Ok(Vec::new())),
            Some(Value::Array(items)) => Ok(Reply::Ok(items)),
            Some(other) => Err(self.http.fault(
                AnswerFault::BadValue,
                format!("{call}: `result` is not a list: {other}"),
            )),
        }
    }

    /// The error of a refusal (`status` ≠ `0`), by the documented codes; an undocumented code is
    /// [`AnswerFault::UnknownCode`].
    pub(super) fn refusal(&self, call: &str, status: &str, message: &str) -> GatewayError {
        let message: String = self.http.scrub(message).chars().take(200).collect();
        let detail = format!("{call}: OneLink status {status}: {message}");
        match status {
            code::AUTH | code::TOKEN => GatewayError::Auth(detail),
            code::THROTTLED => GatewayError::Throttled {
                retry_after: Some(THROTTLE_HINT),
            },
            code::NO_CARD => GatewayError::NotFound,
            code::LOCKED => GatewayError::ChangeLocked {
                retry_after: Some(CHANGE_LOCK_HINT),
                detail,
            },
            code::TRANSID | code::TOO_MANY | code::STATE | code::PARAM | code::NO_JOB => {
                GatewayError::Carrier {
                    status: 200,
                    body: detail,
                }
            }
            _ => self.http.fault(AnswerFault::UnknownCode, detail),
        }
    }

    // ------------------------------------------------------------ faults

    /// An answer without `what`.
    pub(super) fn missing(&self, call: &str, what: &str) -> GatewayError {
        self.http
            .fault(AnswerFault::MissingField, format!("{call}: no `{what}`"))
    }

    /// The first item of `items`; none: an empty `result`.
    pub(super) fn first(&self, call: &str, items: Vec<Value>) -> Result<Value, GatewayError> {
        items.into_iter().next().ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!("{call}: an empty `result`"),
            )
        })
    }

    /// The word (string or number) of `field`; absent: a missing field.
    pub(super) fn word(
        &self,
        call: &str,
        item: &Value,
        field: &str,
    ) -> Result<String, GatewayError> {
        text(item.get(field)).ok_or_else(|| self.missing(call, field))
    }

    /// `field` answered `word`, which its documented table does not hold.
    pub(super) fn outside(&self, call: &str, field: &str, word: &str) -> GatewayError {
        self.http.fault(
            AnswerFault::UnknownStatus,
            format!("{call}: `{field}` {word} is outside the documented table"),
        )
    }

    // ------------------------------------------------------------ items

    pub(super) fn realname_of(
        &self,
        call: &str,
        item: &Value,
    ) -> Result<RealNameStatus, GatewayError> {
        const FIELD: &str = "realNameStatus";
        let word = self.word(call, item, FIELD)?;
        realname_of_word(&word).ok_or_else(|| self.outside(call, FIELD, &word))
    }

    pub(super) fn network_of(
        &self,
        call: &str,
        item: &Value,
    ) -> Result<NetworkStatus, GatewayError> {
        const FIELD: &str = "cardStatus";
        let word = self.word(call, item, FIELD)?;
        match network_of_word(&word) {
            Ok(Some(s)) => Ok(s),
            Ok(None) => Err(GatewayError::NotFound),
            Err(()) => Err(self.outside(call, FIELD, &word)),
        }
    }

    /// A KB figure (`field` of `item`) in exact megabytes; absent: `None`.
    fn kb_field(
        &self,
        call: &str,
        item: &Value,
        field: &str,
    ) -> Result<Option<Megabytes>, GatewayError> {
        let v = match item.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
            Some(v) => v,
        };
        amount_of(v).and_then(kb_to_mb).map(Some).ok_or_else(|| {
            self.http.fault(
                AnswerFault::BadValue,
                format!("{call}: `{field}` {v} is not a plain non-negative number of KB"),
            )
        })
    }

    pub(super) fn usage_of(
        &self,
        call: &str,
        item: &Value,
        month: NaiveDate,
    ) -> Result<MonthUsage, GatewayError> {
        const FIELD: &str = "dataAmount";
        // Blank (`""`, `" "`): no usage this month, or no plan ordered yet (the public response
        // models say so): 0 MB. Absent or `null` is still a missing field.
        let blank = matches!(item.get(FIELD), Some(Value::String(s)) if s.trim().is_empty());
        let mb = if blank {
            Megabytes::ZERO
        } else {
            self.kb_field(call, item, FIELD)?
                .ok_or_else(|| self.missing(call, FIELD))?
        };
        let month_total_mb = check_month_total(mb).map_err(|e| {
            self.http
                .fault(AnswerFault::BadValue, format!("{call}: {e}"))
        })?;
        Ok(MonthUsage {
            month,
            month_total_mb,
        })
    }

    /// `accmMarginList` → active packages: `offeringId`, `useAmount` (used), `totalAmount`
    /// (the limit; absent: none).
    pub(super) fn packages_of(&self, item: &Value) -> Result<Vec<CarrierPackage>, GatewayError> {
        const CALL: &str = "packages";
        let list = match item.get("accmMarginList") {
            Some(Value::Array(l)) => l.as_slice(),
            Some(Value::Null) => &[],
            None => return Err(self.missing(CALL, "accmMarginList")),
            Some(other) => {
                return Err(self.http.fault(
                    AnswerFault::BadValue,
                    format!("packages: `accmMarginList` is not a list: {other}"),
                ));
            }
        };
        list.iter()
            .map(|o| {
                let external_id = text(o.get("offeringId"))
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| {
                        self.http.fault(
                            AnswerFault::MissingField,
                            "packages: an offering without `offeringId`",
                        )
                    })?;
                let used_mb = self.kb_field(CALL, o, "useAmount")?.ok_or_else(|| {
                    self.http.fault(
                        AnswerFault::MissingField,
                        format!("packages: offering {external_id} without `useAmount`"),
                    )
                })?;
                let limit_mb = self.kb_field(CALL, o, "totalAmount")?;
                // Read to refuse a malformed margin; the limit and the use say it all.
                self.kb_field(CALL, o, "remainAmount")?;
                Ok(CarrierPackage {
                    external_id,
                    status: PackageStatus::Active,
                    used_mb,
                    limit_mb,
                    activated_at: None,
                    expires_at: None,
                })
            })
            .collect()
    }
}
