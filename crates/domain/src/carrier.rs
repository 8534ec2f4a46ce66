//! Carriers as configuration: which platform a `carrier_id` speaks, where, with which
//! credentials and within which budget (`tb_carrier`, managed through `/api/admin/carriers`).
//!
//! Credentials ([`crate::Credentials`]) are write-only; see `credentials.rs`.

use crate::{AssumedCall, AssumedCalls, CarrierId, Credentials};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The credential field holding the Basic auth user name a carrier's push stream sends.
pub const STREAM_USERNAME: &str = "stream_username";
/// The credential field holding the Basic auth password a carrier's push stream sends.
pub const STREAM_PASSWORD: &str = "stream_password";

/// The wire protocol of a carrier's platform.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CarrierProtocol {
    /// The project's own JSON protocol (`docs/carriers/cmp-json.md`).
    #[serde(rename = "cmp-json")]
    CmpJson,
    /// China Mobile OneLink EC API v5.
    #[serde(rename = "onelink")]
    OneLink,
    /// China Telecom 5GCMP (CMP 5G connectivity management platform).
    #[serde(rename = "ctcc-5gcmp")]
    Ctcc5gcmp,
    /// Cisco IoT Control Center REST API (also China Unicom's platform).
    #[serde(rename = "control-center")]
    ControlCenter,
    /// 1NCE API (OAuth2 client credentials).
    #[serde(rename = "1nce")]
    OneNce,
    /// emnify REST API (application token exchanged for a JWT).
    #[serde(rename = "emnify")]
    Emnify,
}

str_enum!(CarrierProtocol {
    CmpJson => "cmp-json",
    OneLink => "onelink",
    Ctcc5gcmp => "ctcc-5gcmp",
    ControlCenter => "control-center",
    OneNce => "1nce",
    Emnify => "emnify",
});

impl CarrierProtocol {
    pub const ALL: [CarrierProtocol; 6] = [
        CarrierProtocol::CmpJson,
        CarrierProtocol::OneLink,
        CarrierProtocol::Ctcc5gcmp,
        CarrierProtocol::ControlCenter,
        CarrierProtocol::OneNce,
        CarrierProtocol::Emnify,
    ];

    /// The credential fields the protocol needs, each required (an empty list: none).
    pub const fn credential_fields(self) -> &'static [&'static str] {
        match self {
            CarrierProtocol::CmpJson => &[],
            CarrierProtocol::OneLink => &["appid", "password"],
            CarrierProtocol::Ctcc5gcmp => &["app_key", "secret"],
            CarrierProtocol::ControlCenter => &["username", "api_key"],
            CarrierProtocol::OneNce => &["client_id", "client_secret"],
            CarrierProtocol::Emnify => &["application_token"],
        }
    }

    /// The credential fields of the platform's push stream (its Data Streamer posting to
    /// `POST /api/carriers/{carrier_id}/stream` with HTTP Basic auth): optional, both or neither.
    /// Empty: the platform has no push stream we take.
    pub const fn stream_credential_fields(self) -> &'static [&'static str] {
        match self {
            CarrierProtocol::OneNce | CarrierProtocol::Emnify => {
                &[STREAM_USERNAME, STREAM_PASSWORD]
            }
            _ => &[],
        }
    }

    /// Whether the platform pushes usage records we take (`stream_credential_fields`).
    pub const fn has_push_stream(self) -> bool {
        !self.stream_credential_fields().is_empty()
    }

    /// The budget a new carrier of this protocol starts with: the platform's published limits
    /// where it publishes them (`docs/carriers/<protocol>.md` says where each figure comes from).
    pub const fn default_limits(self) -> CarrierLimits {
        let (rate, concurrent, batch) = match self {
            CarrierProtocol::CmpJson => (0, 0, 1),
            CarrierProtocol::OneLink => (20, 10, 100),
            CarrierProtocol::Ctcc5gcmp => (10, 5, 100),
            CarrierProtocol::ControlCenter => (5, 1, 50),
            CarrierProtocol::OneNce => (10, 5, 100),
            CarrierProtocol::Emnify => (10, 5, 1),
        };
        CarrierLimits {
            rate_limit_per_sec: rate,
            max_concurrent: concurrent,
            batch_size: batch,
            timeout_ms: 5_000,
            assumed_calls: AssumedCalls::NONE,
        }
    }
}

/// A carrier's call budget and bounds. `rate_limit_per_sec` is shared by every node (one Redis
/// bucket per carrier); `max_concurrent` bounds the calls in flight per process; 0 = no limit.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarrierLimits {
    pub rate_limit_per_sec: u32,
    pub max_concurrent: u32,
    /// Most cards one batch call may carry (1 = the platform has no batch call we use).
    pub batch_size: u32,
    /// Bound of one HTTP request, connect to last byte.
    pub timeout_ms: u32,
    /// The *assumed* calls the adapter may make for this carrier: calls that no public source
    /// shows (the protocol's page in `docs/carriers/` marks them). Empty, the default: the
    /// adapter makes documented calls only. A call turned on here that the platform answers as
    /// missing is turned off again by the adapter (in memory) and served by documented calls.
    #[serde(default, skip_serializing_if = "AssumedCalls::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<AssumedCall>))]
    pub assumed_calls: AssumedCalls,
}

impl CarrierLimits {
    pub fn validate(&self) -> Result<(), InvalidField> {
        let bad = |field, message: &str| Err(InvalidField::new(field, message));
        if self.batch_size == 0 || self.batch_size > 1000 {
            return bad("batch_size", "batch_size must be 1..=1000");
        }
        if self.timeout_ms < 100 || self.timeout_ms > 120_000 {
            return bad("timeout_ms", "timeout_ms must be 100..=120000");
        }
        if self.rate_limit_per_sec > 100_000 {
            return bad(
                "rate_limit_per_sec",
                "rate_limit_per_sec must be 0..=100000",
            );
        }
        if self.max_concurrent > 10_000 {
            return bad("max_concurrent", "max_concurrent must be 0..=10000");
        }
        Ok(())
    }
}

/// A carrier field that fails its check: which one, and why (the message names it too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidField {
    pub field: &'static str,
    pub message: String,
}

impl InvalidField {
    fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

impl fmt::Display for InvalidField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// One carrier's configuration (`tb_carrier`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarrierAccount {
    pub carrier_id: CarrierId,
    pub name: String,
    pub protocol: CarrierProtocol,
    /// The platform's API root, e.g. `https://api.iot.10086.cn/v5/ec`.
    pub base_url: String,
    pub credentials: Credentials,
    pub limits: CarrierLimits,
    /// A disabled carrier is never called: its cards' polls fail as `carrier disabled` and are
    /// retried at the retry interval.
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A write of a carrier: `credentials` `None` on an update keeps the stored ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarrierAccountInput {
    pub carrier_id: CarrierId,
    pub name: String,
    pub protocol: CarrierProtocol,
    pub base_url: String,
    pub credentials: Option<Credentials>,
    pub limits: CarrierLimits,
    pub enabled: bool,
}

impl CarrierAccountInput {
    /// Every field checked; the error names the field.
    pub fn validate(&self) -> Result<(), InvalidField> {
        let bad = |field, message: &str| Err(InvalidField::new(field, message));
        if self.carrier_id.0 <= 0 {
            return bad("carrier_id", "carrier_id must be positive");
        }
        if self.name.trim().is_empty() || self.name.len() > 100 {
            return bad("name", "name must have 1 to 100 characters");
        }
        let url = self.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() > 500 {
            return bad(
                "base_url",
                "base_url must be an http:// or https:// URL of at most 500 characters",
            );
        }
        if url.contains(char::is_whitespace) {
            return bad("base_url", "base_url must not contain spaces");
        }
        if let Some(c) = &self.credentials {
            c.validate(self.protocol)
                .map_err(|e| InvalidField::new("credentials", format!("credentials: {e}")))?;
        }
        self.limits.validate()
    }
}

/// How a carrier's calls are going, as one process saw them lately (worker nodes publish it to
/// Redis; the API's carrier page and `/readyz`'s detail show it). Texts are already scrubbed of
/// credentials.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarrierHealth {
    pub carrier_id: CarrierId,
    pub state: CarrierHealthState,
    pub last_ok_at: Option<DateTime<Utc>>,
    pub last_error_at: Option<DateTime<Utc>>,
    /// The last failure's kind (`GatewayError::outcome`, e.g. `auth_error`, `timeout`).
    pub last_error_kind: Option<String>,
    /// The last failure in words, without credentials.
    pub last_error: Option<String>,
    /// Calls answered and failed since the process started.
    pub calls_ok: u64,
    pub calls_failed: u64,
    pub updated_at: DateTime<Utc>,
}

/// The state of [`CarrierHealth`].
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CarrierHealthState {
    /// No call yet.
    Unknown,
    /// The last call was answered.
    Ok,
    /// The last call failed for a reason that may pass (timeout, 5xx, throttling).
    Failing,
    /// The platform refused the credentials: nothing will work until an operator fixes them.
    AuthFailed,
    /// The carrier is disabled: no call is made.
    Disabled,
}

str_enum!(CarrierHealthState {
    Unknown => "unknown",
    Ok => "ok",
    Failing => "failing",
    AuthFailed => "auth_failed",
    Disabled => "disabled",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_round_trip_their_names() {
        for p in CarrierProtocol::ALL {
            assert_eq!(p.as_str().parse::<CarrierProtocol>(), Ok(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
        }
    }

    #[test]
    fn assumed_calls_are_a_list_of_names_and_none_by_default() {
        let limits = CarrierProtocol::OneLink.default_limits();
        assert!(limits.assumed_calls.is_empty());
        let json = serde_json::to_value(limits).unwrap();
        assert!(json.get("assumed_calls").is_none(), "{json}");
        let back: CarrierLimits = serde_json::from_value(json).unwrap();
        assert_eq!(back, limits);

        let on = AssumedCalls::NONE
            .with(AssumedCall::NetworkStatusBatch)
            .with(AssumedCall::UsageBatch);
        let json = serde_json::to_value(on).unwrap();
        assert_eq!(
            json,
            serde_json::json!(["usage_batch", "network_status_batch"])
        );
        assert_eq!(serde_json::from_value::<AssumedCalls>(json).unwrap(), on);
        assert!(serde_json::from_value::<AssumedCalls>(serde_json::json!(["sms_batch"])).is_err());
        assert_eq!(AssumedCalls::all().iter().count(), 3);
        assert!(
            !on.without(AssumedCall::UsageBatch)
                .contains(AssumedCall::UsageBatch)
        );
    }
}
