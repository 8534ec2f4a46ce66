//! The wire side of `/carriers`: the request bodies, the answers, and the checks that turn a
//! body into a `CarrierAccountInput` without ever echoing a credential value (errors name the
//! field; `Credentials::scrub` takes values out of a text).

use crate::AdminError;
use crate::error::FieldError;
use chrono::{DateTime, Utc};
use domain::{
    AssumedCalls, CarrierAccount, CarrierAccountInput, CarrierHealth, CarrierId, CarrierLimits,
    CarrierProtocol, Credentials,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest a credential value may be.
pub const MAX_CREDENTIAL_LEN: usize = 4096;
/// A carrier's call budget as a request gives it: an absent field takes the protocol's default
/// (`CarrierProtocol::default_limits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LimitsBody {
    rate_limit_per_sec: Option<u32>,
    max_concurrent: Option<u32>,
    batch_size: Option<u32>,
    timeout_ms: Option<u32>,
    assumed_calls: Option<AssumedCalls>,
}

impl LimitsBody {
    pub(crate) fn resolve(self, protocol: CarrierProtocol) -> CarrierLimits {
        let d = protocol.default_limits();
        CarrierLimits {
            rate_limit_per_sec: self.rate_limit_per_sec.unwrap_or(d.rate_limit_per_sec),
            max_concurrent: self.max_concurrent.unwrap_or(d.max_concurrent),
            batch_size: self.batch_size.unwrap_or(d.batch_size),
            timeout_ms: self.timeout_ms.unwrap_or(d.timeout_ms),
            assumed_calls: self.assumed_calls.unwrap_or(d.assumed_calls),
        }
    }
}

fn yes() -> bool {
    true
}

/// A carrier body: the fields given, then the call budget and `enabled` that a new carrier and
/// a carrier's new content share, and `limits()`, that budget as the request gives it.
macro_rules! with_limits {
    ($(#[$meta:meta])* pub struct $name:ident { $($fields:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct $name {
            $($fields)*
            /// Calls per second shared by every node; 0 = no limit. Absent: the protocol's default.
            #[serde(default)]
            pub rate_limit_per_sec: Option<u32>,
            /// Calls in flight per process; 0 = no limit. Absent: the protocol's default.
            #[serde(default)]
            pub max_concurrent: Option<u32>,
            /// Most cards one batch call carries. Absent: the protocol's default.
            #[serde(default)]
            pub batch_size: Option<u32>,
            /// Bound of one HTTP request in milliseconds. Absent: the protocol's default.
            #[serde(default)]
            pub timeout_ms: Option<u32>,
            /// The *assumed* calls (no public source shows them) the adapter may make:
            /// `realname_batch`, `usage_batch`, `network_status_batch`; the protocol's page in
            /// `docs/carriers/` says which it has. Absent: none, documented calls only.
            #[serde(default)]
            pub assumed_calls: Option<AssumedCalls>,
            #[serde(default = "yes")]
            pub enabled: bool,
        }

        impl $name {
            pub(crate) fn limits(&self) -> LimitsBody {
                LimitsBody {
                    rate_limit_per_sec: self.rate_limit_per_sec,
                    max_concurrent: self.max_concurrent,
                    batch_size: self.batch_size,
                    timeout_ms: self.timeout_ms,
                    assumed_calls: self.assumed_calls,
                }
            }
        }
    };
}

with_limits! {
    /// A new carrier (`POST /carriers`).
    pub struct NewCarrierBody {
        /// The `carrier_id` of the cards this carrier serves (`tb_iot_card.carrier_id`).
        pub carrier_id: i64,
        pub name: String,
        pub protocol: CarrierProtocol,
        /// The platform's API root, `http://` or `https://`.
        pub base_url: String,
        /// The protocol's credential fields, each a non-empty string (`{}` for `cmp-json`):
        /// `onelink` appid, password; `ctcc-5gcmp` app_key, secret; `control-center` username,
        /// api_key; `1nce` client_id, client_secret; `emnify` application_token. Write-only.
        pub credentials: Value,
    }
}

with_limits! {
    /// The new content of a carrier (`PUT /carriers/{carrier_id}` replaces every field but the
    /// credentials, which are kept when absent).
    pub struct CarrierBody {
        pub name: String,
        pub protocol: CarrierProtocol,
        pub base_url: String,
        /// Absent or `null`: keep the stored credentials (they must fit the protocol). Given: the
        /// new credentials, whole; a field sent as `""` keeps that field's stored value. Write-only.
        #[serde(default)]
        pub credentials: Option<Value>,
    }
}

/// `PATCH /carriers/{carrier_id}/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarrierStatusBody {
    pub enabled: bool,
}

/// A carrier as the API shows it: everything but the credentials' values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarrierView {
    pub carrier_id: CarrierId,
    pub name: String,
    pub protocol: CarrierProtocol,
    pub base_url: String,
    /// The names of the credential fields set, never their values.
    pub credential_fields: Vec<String>,
    pub limits: CarrierLimits,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// What the worker nodes last published; `null` before any did (or when Redis did not
    /// answer).
    pub health: Option<CarrierHealth>,
}

impl CarrierView {
    pub(crate) fn of(account: CarrierAccount, health: Option<CarrierHealth>) -> Self {
        CarrierView {
            carrier_id: account.carrier_id,
            name: account.name,
            protocol: account.protocol,
            base_url: account.base_url,
            credential_fields: account.credentials.fields(),
            limits: account.limits,
            enabled: account.enabled,
            created_at: account.created_at,
            updated_at: account.updated_at,
            health,
        }
    }
}

/// The answer of a test connection: always given when the carrier exists; `ok` says whether
/// the platform accepted the credentials and answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionTest {
    pub ok: bool,
    /// `ok`, or the failure's kind: `auth_error`, `timeout`, `transport_error`, `carrier_4xx`,
    /// `carrier_5xx`, `throttled`, `decode_error`, `unintelligible`, ...
    pub outcome: String,
    /// The failure in words, credentials replaced by `***`.
    pub message: String,
    pub elapsed_ms: u64,
}

/// The credentials of a request: an object of strings without control characters. The
/// messages name the field, never the value. `""` values are kept as they are (an update
/// fills them from the stored credentials; validation refuses any left empty).
pub(crate) fn credentials_of(value: &Value) -> Result<Credentials, AdminError> {
    let Value::Object(fields) = value else {
        return Err(AdminError::invalid(
            "/credentials",
            "must be an object of strings",
        ));
    };
    let mut credentials = Credentials::new();
    let mut errors = Vec::new();
    for (name, v) in fields {
        let pointer = format!(
            "/credentials/{}",
            name.replace('~', "~0").replace('/', "~1")
        );
        match v {
            Value::String(s) if s.chars().count() > MAX_CREDENTIAL_LEN => {
                errors.push(FieldError::new(
                    pointer,
                    format!("must be at most {MAX_CREDENTIAL_LEN} characters"),
                ))
            }
            Value::String(s) if s.chars().any(char::is_control) => errors.push(FieldError::new(
                pointer,
                "must not contain control characters",
            )),
            Value::String(s) => credentials = credentials.with(name.clone(), s.clone()),
            _ => errors.push(FieldError::new(pointer, "must be a string")),
        }
    }
    if errors.is_empty() {
        Ok(credentials)
    } else {
        Err(AdminError::Invalid(errors))
    }
}

/// `input` checked by `CarrierAccountInput::validate`, the message given its field.
pub(crate) fn validate(input: &CarrierAccountInput) -> Result<(), AdminError> {
    input
        .validate()
        .map_err(|e| AdminError::invalid(format!("/{}", e.field), e.message))?;
    if input.name.chars().any(char::is_control) {
        return Err(AdminError::invalid(
            "/name",
            "must not contain control characters",
        ));
    }
    if input.base_url.chars().any(char::is_control) {
        return Err(AdminError::invalid(
            "/base_url",
            "must not contain control characters",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn credentials_must_be_an_object_of_strings() {
        let e = credentials_of(&serde_json::json!("S3cr3t")).unwrap_err();
        assert!(!e.to_string().contains("S3cr3t"));
        let e =
            credentials_of(&serde_json::json!({"password": 5, "appid": "a\u{0}b"})).unwrap_err();
        let AdminError::Invalid(errors) = e else {
            panic!("invalid expected")
        };
        let pointers: Vec<&str> = errors.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            vec!["/credentials/appid", "/credentials/password"]
        );
        let c = credentials_of(&serde_json::json!({"appid": "a", "password": "p"})).unwrap();
        assert_eq!(c.fields(), vec!["appid", "password"]);
    }

    #[test]
    fn absent_limits_take_the_protocols_defaults() {
        let limits = LimitsBody {
            batch_size: Some(7),
            ..LimitsBody::default()
        }
        .resolve(CarrierProtocol::OneLink);
        let d = CarrierProtocol::OneLink.default_limits();
        assert_eq!(limits.batch_size, 7);
        assert_eq!(limits.rate_limit_per_sec, d.rate_limit_per_sec);
        assert_eq!(limits.timeout_ms, d.timeout_ms);
    }
}
