//! [`CarrierRouter`]: the [`CarrierGateway`] the handlers hold. It sends each call to the
//! adapter of the card's carrier (`tb_carrier`), or to the default gateway (`CMP_GATEWAY_URL`,
//! the project's own protocol) for a carrier without a row, refuses calls of a disabled carrier
//! without a request, and keeps a tally of each carrier's outcomes for its health.
//!
//! [`CarrierRouter::apply`] installs a new configuration at run time: an account whose settings
//! did not change keeps its adapter (and so its token and connections).

use super::{AdapterContext, build_adapter};
use crate::{CarrierGateway, GatewayError, Paced};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::CarrierPackage;
use domain::store::CarrierStore;
use domain::{
    CarrierAccount, CarrierHealth, CarrierHealthState, CarrierId, MonthUsage, NetworkStatus,
    RealNameStatus,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

mod calls;

struct Route {
    account: CarrierAccount,
    adapter: Arc<dyn CarrierGateway>,
}

#[derive(Debug, Default, Clone)]
struct Tally {
    state: Option<CarrierHealthState>,
    last_ok_at: Option<DateTime<Utc>>,
    last_error_at: Option<DateTime<Utc>>,
    last_error_kind: Option<String>,
    last_error: Option<String>,
    calls_ok: u64,
    calls_failed: u64,
    /// The last call of any outcome, ours refused included (what the dispatch paces by).
    last_called_at: Option<DateTime<Utc>>,
}

/// Routes every call to its carrier's adapter.
pub struct CarrierRouter {
    default: Arc<dyn CarrierGateway>,
    ctx: AdapterContext,
    routes: RwLock<Arc<HashMap<CarrierId, Arc<Route>>>>,
    tallies: Mutex<HashMap<CarrierId, Tally>>,
    /// The store's version the installed configuration was read at (`CarrierStore::version`).
    applied: Mutex<Option<StoreVersion>>,
    /// Told how many cards each call of a configured carrier carries, as it starts: the
    /// dispatch budget's polls pending a reservation ([`CarrierRouter::with_released`]).
    released: Option<Released>,
}

/// See [`CarrierRouter::with_released`].
type Released = Arc<dyn Fn(usize) + Send + Sync>;

type StoreVersion = (Option<DateTime<Utc>>, u64);

impl std::fmt::Debug for CarrierRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CarrierRouter")
            .field("carriers", &self.routes().len())
            .finish_non_exhaustive()
    }
}

impl CarrierRouter {
    /// `default`: the gateway of carriers without a configuration row.
    pub fn new(default: Arc<dyn CarrierGateway>, ctx: AdapterContext) -> Self {
        Self {
            default,
            ctx,
            routes: RwLock::new(Arc::new(HashMap::new())),
            tallies: Mutex::new(HashMap::new()),
            applied: Mutex::new(None),
            released: None,
        }
    }

    /// `released(cards)` as every call of a configured carrier starts (the cards it carries: 1,
    /// or the batch's). The worker wires it to `HttpGateway::released`: polls the dispatch handed
    /// out count against its budget room until their query is made, and the default gateway
    /// sees only its own calls.
    #[must_use]
    pub fn with_released(mut self, released: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.released = Some(Arc::new(released));
        self
    }

    fn routes(&self) -> Arc<HashMap<CarrierId, Arc<Route>>> {
        self.routes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Installs `accounts` as the carriers' configuration; carriers not listed go back to the
    /// default gateway. Answers the accounts whose adapter could not be built (they are left
    /// out, so their calls go to no carrier: a clear `Auth` error each).
    pub fn apply(&self, accounts: Vec<CarrierAccount>) -> Vec<(CarrierId, GatewayError)> {
        let old = self.routes();
        let mut next = HashMap::with_capacity(accounts.len());
        let mut failed = Vec::new();
        for account in accounts {
            let id = account.carrier_id;
            if let Some(r) = old.get(&id).filter(|r| r.account == account) {
                next.insert(id, r.clone());
                continue;
            }
            match build_adapter(&account, &self.ctx) {
                Ok(adapter) => {
                    info!(carrier = %id, protocol = %account.protocol, enabled = account.enabled,
                        "carrier configured");
                    next.insert(id, Arc::new(Route { account, adapter }));
                }
                Err(e) => {
                    warn!(carrier = %id, protocol = %account.protocol, error = %e,
                        "carrier configuration refused; its cards are not polled until it is fixed");
                    let failing = Arc::new(Route {
                        adapter: Arc::new(Refusing(e.to_string())),
                        account,
                    });
                    next.insert(id, failing);
                    failed.push((id, e));
                }
            }
        }
        *self.routes.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        failed
    }

    /// Reads the carriers from `store` once and installs them, unless the store's version is
    /// the one installed.
    pub async fn refresh(&self, store: &dyn CarrierStore) -> Result<(), domain::StoreError> {
        // The version first: a change landing between the two reads is read again next time.
        let version = store.version().await?;
        if *self.applied.lock().unwrap_or_else(|p| p.into_inner()) == Some(version) {
            return Ok(());
        }
        let accounts = store.all().await?;
        self.apply(accounts);
        *self.applied.lock().unwrap_or_else(|p| p.into_inner()) = Some(version);
        Ok(())
    }

    /// [`refresh`](Self::refresh) every `every` until `shutdown`; a failed read keeps the
    /// carriers installed.
    pub async fn follow(
        self: Arc<Self>,
        store: Arc<dyn CarrierStore>,
        every: Duration,
        shutdown: CancellationToken,
    ) {
        loop {
            if let Err(e) = self.refresh(store.as_ref()).await {
                warn!(error = %e, "cannot read the carriers; keeping the last ones");
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
        }
    }

    /// Every configured carrier's account.
    pub fn accounts(&self) -> Vec<CarrierAccount> {
        self.routes().values().map(|r| r.account.clone()).collect()
    }

    /// The gateway of `carrier` (an error for a disabled one) and whether it is configured
    /// (only configured carriers keep a health tally): one look at the routes per call.
    fn route(&self, carrier: CarrierId) -> (Result<Arc<dyn CarrierGateway>, GatewayError>, bool) {
        match self.routes().get(&carrier) {
            Some(r) if !r.account.enabled => (Err(GatewayError::Disabled(carrier.0)), true),
            Some(r) => (Ok(r.adapter.clone()), true),
            None => (Ok(self.default.clone()), false),
        }
    }

    /// The health of every configured carrier, as this process saw its calls.
    pub fn health(&self, now: DateTime<Utc>) -> Vec<CarrierHealth> {
        let routes = self.routes();
        let tallies = self.tallies.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<CarrierHealth> = routes
            .values()
            .map(|r| {
                let t = tallies
                    .get(&r.account.carrier_id)
                    .cloned()
                    .unwrap_or_default();
                let state = if r.account.enabled {
                    t.state.unwrap_or(CarrierHealthState::Unknown)
                } else {
                    CarrierHealthState::Disabled
                };
                CarrierHealth {
                    carrier_id: r.account.carrier_id,
                    state,
                    last_ok_at: t.last_ok_at,
                    last_error_at: t.last_error_at,
                    last_error_kind: t.last_error_kind,
                    last_error: t.last_error,
                    calls_ok: t.calls_ok,
                    calls_failed: t.calls_failed,
                    updated_at: now,
                }
            })
            .collect();
        out.sort_by_key(|h| h.carrier_id);
        out
    }

    /// The enabled configured carriers with a rate that were called within `within`: what the
    /// dispatch loop paces itself by ([`crate::HttpGateway::dispatch_room_with`]). `batched`:
    /// the polls in question are queries the batched dispatch gathers (real-name, usage), so
    /// one call carries up to the adapter's batch size.
    pub fn paced(&self, within: Duration, batched: bool) -> Vec<Paced> {
        let since = self.ctx.clock.now() - chrono::Duration::from_std(within).unwrap_or_default();
        let routes = self.routes();
        let tallies = self.tallies.lock().unwrap_or_else(|p| p.into_inner());
        routes
            .values()
            .filter(|r| r.account.enabled && r.account.limits.rate_limit_per_sec > 0)
            .filter(|r| {
                tallies
                    .get(&r.account.carrier_id)
                    .and_then(|t| t.last_called_at)
                    .is_some_and(|at| at >= since)
            })
            .map(|r| Paced {
                carrier: r.account.carrier_id,
                rate: r.account.limits.rate_limit_per_sec,
                cards_per_call: if batched {
                    r.adapter.batch_size(r.account.carrier_id).max(1)
                } else {
                    1
                },
            })
            .collect()
    }

    fn tally<T>(&self, carrier: CarrierId, res: &Result<T, GatewayError>) {
        let now = self.ctx.clock.now();
        let mut tallies = self.tallies.lock().unwrap_or_else(|p| p.into_inner());
        let t = tallies.entry(carrier).or_default();
        t.last_called_at = Some(now);
        match res {
            // The carrier answered: not knowing a card is an answer.
            Ok(_) | Err(GatewayError::NotFound | GatewayError::MissingFromBatch) => {
                t.state = Some(CarrierHealthState::Ok);
                t.last_ok_at = Some(now);
                t.calls_ok += 1;
            }
            // Our own budget held the call back, or the carrier is off: nothing was asked.
            Err(GatewayError::RateLimited | GatewayError::Disabled(_)) => {}
            Err(e) => {
                t.state = Some(if matches!(e, GatewayError::Auth(_)) {
                    CarrierHealthState::AuthFailed
                } else {
                    CarrierHealthState::Failing
                });
                t.last_error_at = Some(now);
                t.last_error_kind = Some(e.outcome().to_owned());
                t.last_error = Some(e.to_string());
                t.calls_failed += 1;
            }
        }
    }

    async fn with_route<T, F, Fut>(
        &self,
        (carrier, cards): (CarrierId, usize),
        call: F,
    ) -> Result<T, GatewayError>
    where
        F: FnOnce(Arc<dyn CarrierGateway>) -> Fut,
        Fut: std::future::Future<Output = Result<T, GatewayError>>,
    {
        let (gw, configured) = self.route(carrier);
        if configured && let Some(released) = &self.released {
            // The call reserves its slot as it starts (the bucket books it at once, even while
            // it waits for the slot): from now the bucket counts it, the pending polls must not.
            released(cards);
        }
        let res = match gw {
            Ok(gw) => call(gw).await,
            Err(e) => Err(e),
        };
        if configured {
            self.tally(carrier, &res);
            if let Err(GatewayError::Throttled { retry_after }) = &res {
                slow_down(self.ctx.limiter.as_deref(), carrier, *retry_after).await;
            }
        }
        res
    }
}

/// The carrier refused a call as over its limit: its shared budget slows down on every node
/// (`RateLimiter::throttled`). A limiter that cannot be told is logged, not an error: the
/// call's own outcome stands.
pub(crate) async fn slow_down(
    limiter: Option<&dyn domain::RateLimiter>,
    carrier: CarrierId,
    retry_after: Option<Duration>,
) {
    let Some(limiter) = limiter else {
        return;
    };
    if let Err(error) = limiter.throttled(&carrier.to_string(), retry_after).await {
        tracing::debug!(carrier = %carrier, %error, "could not slow the carrier's budget down");
    }
}

/// The adapter of a carrier whose configuration could not be built: every call fails with why.
struct Refusing(String);

#[async_trait]
impl CarrierGateway for Refusing {
    async fn realname(&self, _: CarrierId, _: &str) -> Result<RealNameStatus, GatewayError> {
        Err(GatewayError::Auth(self.0.clone()))
    }
    async fn usage(&self, _: CarrierId, _: &str) -> Result<MonthUsage, GatewayError> {
        Err(GatewayError::Auth(self.0.clone()))
    }
    async fn packages(&self, _: CarrierId, _: &str) -> Result<Vec<CarrierPackage>, GatewayError> {
        Err(GatewayError::Auth(self.0.clone()))
    }
    async fn stop(&self, _: CarrierId, _: &str) -> Result<NetworkStatus, GatewayError> {
        Err(GatewayError::Auth(self.0.clone()))
    }
    async fn start(&self, _: CarrierId, _: &str) -> Result<NetworkStatus, GatewayError> {
        Err(GatewayError::Auth(self.0.clone()))
    }
    async fn sync_page(
        &self,
        _: CarrierId,
        _: chrono::DateTime<chrono::Utc>,
        _: u32,
    ) -> Result<domain::SyncPage, GatewayError> {
        Err(GatewayError::Auth(self.0.clone()))
    }
    async fn probe(&self, _: CarrierId) -> Result<(), GatewayError> {
        Err(GatewayError::Auth(self.0.clone()))
    }
}
