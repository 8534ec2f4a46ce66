//! Carriers as configuration (`/carriers`): which platform a `carrier_id` speaks, where, with
//! which credentials and within which budget; each carrier's health as the workers see it; and
//! "test connection", one harmless authenticated call through the carrier's adapter.
//!
//! Credentials are write-only. They come in as a JSON object of strings, are checked against
//! the protocol's fields and stored; no answer, error or log line of this module carries a
//! value: answers name the fields set (`credential_fields`), errors name the field, and the
//! test's message has every credential value of the account replaced by `***`.

mod body;
pub mod stream;

use crate::AdminError;
use crate::error::StoreResultExt;
use body::{credentials_of, validate};
use domain::store::{CarrierStore, Page, Paged};
use domain::{CarrierAccount, CarrierAccountInput, CarrierHealth, CarrierId, Clock, Credentials};
use gateway::carriers::{AdapterContext, build_adapter};
use polling_queue::CarrierHealthBoard;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use body::{
    CarrierBody, CarrierStatusBody, CarrierView, ConnectionTest, MAX_CREDENTIAL_LEN, NewCarrierBody,
};

/// The test connection gives up after twice the carrier's timeout, at most this long (an
/// operator waits for the answer, and so does the API's request timeout).
pub const MAX_TEST_DURATION: Duration = Duration::from_secs(8);

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
                message: account.credentials.scrub(&e.to_string()),
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
