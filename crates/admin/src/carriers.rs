//! Carriers as configuration (`/carriers`): which platform a `carrier_id` speaks, where, with
//! which credentials and within which budget; each carrier's health as the workers see it; and
//! "test connection", one harmless authenticated call through the carrier's adapter.
//!
//! Credentials are write-only. They come in as a JSON object of strings, are checked against
//! the protocol's fields and stored; no answer, error or log line of this module carries a
//! value: answers name the fields set (`credential_fields`), errors name the field, and the
//! test's message has every credential value of the account replaced by `***`.

use crate::AdminError;
use crate::error::{FieldError, StoreResultExt};
use chrono::{DateTime, Utc};
use domain::store::{CarrierStore, Page, Paged};
use domain::{
    CarrierAccount, CarrierAccountInput, CarrierHealth, CarrierId, CarrierLimits, CarrierProtocol,
    Clock, Credentials,
};
use gateway::carriers::{AdapterContext, build_adapter};
use polling_queue::CarrierHealthBoard;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use utoipa::ToSchema;

/// Longest a credential value may be.
pub const MAX_CREDENTIAL_LEN: usize = 4096;
/// The test connection gives up after twice the carrier's timeout, at most this long (an
/// operator waits for the answer, and so does the API's request timeout).
pub const MAX_TEST_DURATION: Duration = Duration::from_secs(8);

/// A carrier's call budget as a request gives it: an absent field takes the protocol's default
/// (`CarrierProtocol::default_limits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LimitsBody {
    rate_limit_per_sec: Option<u32>,
    max_concurrent: Option<u32>,
    batch_size: Option<u32>,
    timeout_ms: Option<u32>,
}

impl LimitsBody {
    fn resolve(self, protocol: CarrierProtocol) -> CarrierLimits {
        let d = protocol.default_limits();
        CarrierLimits {
            rate_limit_per_sec: self.rate_limit_per_sec.unwrap_or(d.rate_limit_per_sec),
            max_concurrent: self.max_concurrent.unwrap_or(d.max_concurrent),
            batch_size: self.batch_size.unwrap_or(d.batch_size),
            timeout_ms: self.timeout_ms.unwrap_or(d.timeout_ms),
        }
    }
}

fn yes() -> bool {
    true
}

/// A new carrier (`POST /carriers`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"carrier_id": 1, "name": "China Mobile OneLink",
    "protocol": "onelink", "base_url": "https://api.iot.10086.cn/v5/ec",
    "credentials": {"appid": "your-appid", "password": "your-password"},
    "rate_limit_per_sec": 20, "enabled": true}))]
pub struct NewCarrierBody {
    /// The `carrier_id` of the cards this carrier serves (`tb_iot_card.carrier_id`).
    #[schema(minimum = 1)]
    pub carrier_id: i64,
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    pub protocol: CarrierProtocol,
    /// The platform's API root, `http://` or `https://`.
    #[schema(max_length = 500, pattern = "^https?://\\S+$")]
    pub base_url: String,
    /// The protocol's credential fields, each a non-empty string (`{}` for `cmp-json`):
    /// `onelink` appid, password; `ctcc-5gcmp` app_key, secret; `control-center` username,
    /// api_key; `1nce` client_id, client_secret; `emnify` application_token. Write-only.
    #[schema(value_type = HashMap<String, String>)]
    pub credentials: Value,
    /// Calls per second shared by every node; 0 = no limit. Absent: the protocol's default.
    #[serde(default)]
    #[schema(maximum = 100000)]
    pub rate_limit_per_sec: Option<u32>,
    /// Calls in flight per process; 0 = no limit. Absent: the protocol's default.
    #[serde(default)]
    #[schema(maximum = 10000)]
    pub max_concurrent: Option<u32>,
    /// Most cards one batch call carries. Absent: the protocol's default.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000)]
    pub batch_size: Option<u32>,
    /// Bound of one HTTP request in milliseconds. Absent: the protocol's default.
    #[serde(default)]
    #[schema(minimum = 100, maximum = 120000)]
    pub timeout_ms: Option<u32>,
    #[serde(default = "yes")]
    pub enabled: bool,
}

/// The new content of a carrier (`PUT /carriers/{carrier_id}` replaces every field but the
/// credentials, which are kept when absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"name": "China Mobile OneLink", "protocol": "onelink",
    "base_url": "https://api.iot.10086.cn/v5/ec", "rate_limit_per_sec": 20,
    "enabled": true}))]
pub struct CarrierBody {
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    pub protocol: CarrierProtocol,
    #[schema(max_length = 500, pattern = "^https?://\\S+$")]
    pub base_url: String,
    /// Absent or `null`: keep the stored credentials (they must fit the protocol). Given: the
    /// new credentials, whole; a field sent as `""` keeps that field's stored value. Write-only.
    #[serde(default)]
    #[schema(value_type = Option<HashMap<String, String>>)]
    pub credentials: Option<Value>,
    /// Calls per second shared by every node; 0 = no limit. Absent: the protocol's default.
    #[serde(default)]
    #[schema(maximum = 100000)]
    pub rate_limit_per_sec: Option<u32>,
    /// Calls in flight per process; 0 = no limit. Absent: the protocol's default.
    #[serde(default)]
    #[schema(maximum = 10000)]
    pub max_concurrent: Option<u32>,
    /// Most cards one batch call carries. Absent: the protocol's default.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000)]
    pub batch_size: Option<u32>,
    /// Bound of one HTTP request in milliseconds. Absent: the protocol's default.
    #[serde(default)]
    #[schema(minimum = 100, maximum = 120000)]
    pub timeout_ms: Option<u32>,
    #[serde(default = "yes")]
    pub enabled: bool,
}

macro_rules! limits_of {
    ($($body:ty),*) => {$(
        impl $body {
            fn limits(&self) -> LimitsBody {
                LimitsBody {
                    rate_limit_per_sec: self.rate_limit_per_sec,
                    max_concurrent: self.max_concurrent,
                    batch_size: self.batch_size,
                    timeout_ms: self.timeout_ms,
                }
            }
        }
    )*};
}
limits_of!(NewCarrierBody, CarrierBody);

/// `PATCH /carriers/{carrier_id}/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CarrierStatusBody {
    pub enabled: bool,
}

/// A carrier as the API shows it: everything but the credentials' values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = Carrier)]
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
    fn of(account: CarrierAccount, health: Option<CarrierHealth>) -> Self {
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ConnectionTest {
    pub ok: bool,
    /// `ok`, or the failure's kind: `auth_error`, `timeout`, `transport_error`, `carrier_4xx`,
    /// `carrier_5xx`, `throttled`, `decode_error`, `unintelligible`, ...
    pub outcome: String,
    /// The failure in words, credentials replaced by `***`.
    pub message: String,
    pub elapsed_ms: u64,
}

/// The carrier admin service. Cheap to clone.
#[derive(Clone)]
pub struct CarrierService {
    store: Arc<dyn CarrierStore>,
    board: CarrierHealthBoard,
    timezone: chrono_tz::Tz,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for CarrierService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CarrierService").finish_non_exhaustive()
    }
}

/// The field a message of `CarrierAccountInput::validate` is about, as a JSON pointer.
fn pointer_of(message: &str) -> &'static str {
    const FIELDS: [(&str, &str); 9] = [
        ("carrier_id", "/carrier_id"),
        ("name", "/name"),
        ("base_url", "/base_url"),
        ("credentials", "/credentials"),
        ("batch_size", "/batch_size"),
        ("timeout_ms", "/timeout_ms"),
        ("rate_limit_per_sec", "/rate_limit_per_sec"),
        ("max_concurrent", "/max_concurrent"),
        ("protocol", "/protocol"),
    ];
    FIELDS
        .iter()
        .find(|(field, _)| message.starts_with(field))
        .map_or("", |(_, pointer)| pointer)
}

/// The credentials of a request: an object of strings without control characters. The
/// messages name the field, never the value. `""` values are kept as they are (an update
/// fills them from the stored credentials; validation refuses any left empty).
fn credentials_of(value: &Value) -> Result<Credentials, AdminError> {
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
fn validate(input: &CarrierAccountInput) -> Result<(), AdminError> {
    input
        .validate()
        .map_err(|message| AdminError::invalid(pointer_of(&message), message))?;
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

/// `text` with every credential value of `credentials` replaced by `***` (longest first, so a
/// value inside another is not left half-replaced).
pub fn scrub(text: &str, credentials: &Credentials) -> String {
    let mut values: Vec<&str> = credentials
        .values()
        .map(domain::Secret::expose)
        .filter(|v| !v.is_empty())
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut out = text.to_owned();
    for v in values {
        out = out.replace(v, "***");
    }
    out
}

impl CarrierService {
    pub fn new(
        store: Arc<dyn CarrierStore>,
        board: CarrierHealthBoard,
        timezone: chrono_tz::Tz,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            board,
            timezone,
            clock,
        }
    }

    /// Every carrier's published health; none when Redis does not answer (the page still
    /// shows the configuration).
    async fn health_board(&self) -> HashMap<CarrierId, CarrierHealth> {
        match self.board.read_all().await {
            Ok(all) => all.into_iter().map(|h| (h.carrier_id, h)).collect(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the carrier health board");
                HashMap::new()
            }
        }
    }

    async fn health(&self, id: CarrierId) -> Option<CarrierHealth> {
        match self.board.read(id).await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(error = %e, carrier_id = id.get(), "cannot read the carrier's health");
                None
            }
        }
    }

    async fn account(&self, id: CarrierId) -> Result<CarrierAccount, AdminError> {
        self.store
            .get(id)
            .await
            .admin()?
            .ok_or_else(|| AdminError::NotFound(format!("carrier {id}")))
    }

    pub async fn list(&self, page: Page) -> Result<Paged<CarrierView>, AdminError> {
        let accounts = self.store.list(page).await.admin()?;
        let mut board = if accounts.items.is_empty() {
            HashMap::new()
        } else {
            self.health_board().await
        };
        Ok(Paged {
            items: accounts
                .items
                .into_iter()
                .map(|a| {
                    let health = board.remove(&a.carrier_id);
                    CarrierView::of(a, health)
                })
                .collect(),
            total: accounts.total,
            page: accounts.page,
            page_size: accounts.page_size,
        })
    }

    pub async fn get(&self, id: CarrierId) -> Result<CarrierView, AdminError> {
        let account = self.account(id).await?;
        let health = self.health(id).await;
        Ok(CarrierView::of(account, health))
    }

    pub async fn create(&self, body: NewCarrierBody) -> Result<CarrierView, AdminError> {
        let credentials = credentials_of(&body.credentials)?;
        let input = CarrierAccountInput {
            carrier_id: CarrierId(body.carrier_id),
            name: body.name.trim().to_owned(),
            protocol: body.protocol,
            base_url: body.base_url.trim().to_owned(),
            credentials: Some(credentials),
            limits: body.limits().resolve(body.protocol),
            enabled: body.enabled,
        };
        validate(&input)?;
        let account = self.store.insert(&input).await.admin()?;
        tracing::info!(
            carrier_id = account.carrier_id.get(),
            protocol = %account.protocol,
            "carrier created"
        );
        Ok(CarrierView::of(account, None))
    }

    pub async fn update(
        &self,
        id: CarrierId,
        body: CarrierBody,
    ) -> Result<CarrierView, AdminError> {
        let current = self.account(id).await?;
        let credentials = match &body.credentials {
            None | Some(Value::Null) => {
                // Kept: they must still fit the protocol.
                if current.credentials.validate(body.protocol).is_err() {
                    return Err(AdminError::invalid(
                        "/credentials",
                        format!(
                            "the stored credentials do not fit {}: send the new ones",
                            body.protocol
                        ),
                    ));
                }
                None
            }
            Some(value) => {
                let sent = credentials_of(value)?;
                // A field sent empty keeps its stored value.
                let mut merged = Credentials::new();
                for field in sent.fields() {
                    let value = match sent.get(&field) {
                        Some(v) if !v.is_empty() => v.expose().to_owned(),
                        _ => current
                            .credentials
                            .get(&field)
                            .map(|v| v.expose().to_owned())
                            .unwrap_or_default(),
                    };
                    merged = merged.with(field, value);
                }
                Some(merged)
            }
        };
        let input = CarrierAccountInput {
            carrier_id: id,
            name: body.name.trim().to_owned(),
            protocol: body.protocol,
            base_url: body.base_url.trim().to_owned(),
            credentials,
            limits: body.limits().resolve(body.protocol),
            enabled: body.enabled,
        };
        validate(&input)?;
        let account = self.store.update(&input).await.admin()?;
        tracing::info!(carrier_id = id.get(), protocol = %account.protocol, "carrier updated");
        let health = self.health(id).await;
        Ok(CarrierView::of(account, health))
    }

    pub async fn set_enabled(
        &self,
        id: CarrierId,
        enabled: bool,
    ) -> Result<CarrierView, AdminError> {
        let account = self
            .store
            .set_enabled(id, enabled)
            .await
            .admin()?
            .ok_or_else(|| AdminError::NotFound(format!("carrier {id}")))?;
        tracing::info!(
            carrier_id = id.get(),
            enabled,
            "carrier enabled or disabled"
        );
        let health = self.health(id).await;
        Ok(CarrierView::of(account, health))
    }

    /// One harmless authenticated call through the carrier's adapter, with the stored
    /// credentials; a disabled carrier is tested too. `NotFound` when there is no such carrier;
    /// every failure of the call itself is an answer with `ok: false`.
    pub async fn test_connection(&self, id: CarrierId) -> Result<ConnectionTest, AdminError> {
        let account = self.account(id).await?;
        let ctx = AdapterContext::new(self.timezone, self.clock.clone());
        let bound =
            Duration::from_millis(u64::from(account.limits.timeout_ms) * 2).min(MAX_TEST_DURATION);
        let started = Instant::now();
        let result = match build_adapter(&account, &ctx) {
            Ok(adapter) => match tokio::time::timeout(bound, adapter.probe(id)).await {
                Ok(r) => r,
                Err(_) => Err(gateway::GatewayError::Timeout),
            },
            Err(e) => Err(e),
        };
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let answer = match result {
            Ok(()) => ConnectionTest {
                ok: true,
                outcome: "ok".to_owned(),
                message: "the platform accepted the credentials and answered".to_owned(),
                elapsed_ms,
            },
            Err(e) => ConnectionTest {
                ok: false,
                outcome: e.outcome().to_owned(),
                message: scrub(&e.to_string(), &account.credentials),
                elapsed_ms,
            },
        };
        tracing::info!(
            carrier_id = id.get(),
            outcome = %answer.outcome,
            elapsed_ms,
            "carrier connection tested"
        );
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn scrub_replaces_every_value() {
        let c = Credentials::new()
            .with("appid", "app")
            .with("password", "app-secret");
        assert_eq!(
            scrub("sent app-secret for app", &c),
            "sent *** for ***",
            "longest first"
        );
    }

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
    fn validation_messages_name_their_field() {
        assert_eq!(pointer_of("batch_size must be 1..=1000"), "/batch_size");
        assert_eq!(pointer_of("credentials: onelink needs ..."), "/credentials");
        assert_eq!(pointer_of("base_url must be ..."), "/base_url");
        assert_eq!(pointer_of("name must have ..."), "/name");
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
