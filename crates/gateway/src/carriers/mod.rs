//! Adapters for the carrier platforms operators hold contracts with, each behind
//! [`CarrierGateway`], and the [`CarrierRouter`] that sends each card's calls to its carrier's
//! adapter.
//!
//! One module per protocol (`docs/carriers/<protocol>.md` is its page: endpoints, auth, limits,
//! status and unit tables, assumptions):
//!
//! | protocol | module | platform |
//! | --- | --- | --- |
//! | `cmp-json` | [`crate::HttpGateway`] | the project's own protocol |
//! | `onelink` | `onelink` | China Mobile OneLink EC API v5 |
//! | `ctcc-5gcmp` | `ctcc` | China Telecom 5GCMP |
//! | `control-center` | `control_center` | Cisco IoT Control Center REST (China Unicom) |
//! | `1nce` | `onence` | 1NCE API |
//! | `emnify` | `emnify` | emnify REST API |
//!
//! Every adapter goes through [`transport::CarrierHttp`] (the carrier's shared rate budget, a
//! concurrency bound, a timeout on every request, metrics, credentials scrubbed from every
//! text) and normalises at the edge: units to exact decimal megabytes ([`units`]), the carrier's
//! month to ours, statuses through a table. An answer it does not understand is
//! [`GatewayError::Unintelligible`] with a metric, never a guess.

mod control_center;
mod ctcc;
mod emnify;
mod onelink;
mod onence;
mod router;
pub mod stream;
mod token;
pub(crate) mod transport;
pub mod units;

/// Control Center's Search Devices (a delta sync the trait has no call for) is a method of its
/// adapter type, hence the type is public.
pub use control_center::{ControlCenter, DevicePage, ModifiedDevice, SEARCH_PAGE_SIZE};
pub use ctcc::sign as ctcc_sign;
pub use router::CarrierRouter;
pub(crate) use router::slow_down;

use crate::{CarrierGateway, GatewayConfig, GatewayError, HttpGateway, RetryPolicy};
use domain::{CarrierAccount, CarrierProtocol, Clock, RateLimiter};
use std::sync::Arc;
use std::time::Duration;

/// What every adapter shares besides its account: our time zone (the month usage belongs to),
/// the clock (token expiry, `transid` stamps), the cluster-wide rate limiter.
#[derive(Clone)]
pub struct AdapterContext {
    /// `CMP_TIMEZONE`: the carrier's month is mapped to this zone's month.
    pub timezone: chrono_tz::Tz,
    pub clock: Arc<dyn Clock>,
    /// The shared budget (Redis GCRA, bucket = the carrier id); `None`: no shared limit.
    pub limiter: Option<Arc<dyn RateLimiter>>,
    /// Longest wait for a budget slot before a call reports `RateLimited`.
    pub max_rate_wait: Duration,
    /// Retries of stop/start.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for AdapterContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterContext")
            .field("timezone", &self.timezone)
            .field("limiter", &self.limiter.is_some())
            .field("max_rate_wait", &self.max_rate_wait)
            .finish_non_exhaustive()
    }
}

impl AdapterContext {
    /// No shared limiter, the default waits and retries.
    pub fn new(timezone: chrono_tz::Tz, clock: Arc<dyn Clock>) -> Self {
        Self {
            timezone,
            clock,
            limiter: None,
            max_rate_wait: Duration::from_secs(2),
            retry: RetryPolicy::default(),
        }
    }

    pub fn with_limiter(mut self, limiter: Arc<dyn RateLimiter>) -> Self {
        self.limiter = Some(limiter);
        self
    }
}

/// The adapter of `account`'s protocol. A disabled account still gets one (the admin API's
/// "test connection" may call it); the [`CarrierRouter`] keeps polls away from it.
pub fn build_adapter(
    account: &CarrierAccount,
    ctx: &AdapterContext,
) -> Result<Arc<dyn CarrierGateway>, GatewayError> {
    account
        .credentials
        .validate(account.protocol)
        .map_err(GatewayError::Auth)?;
    Ok(match account.protocol {
        CarrierProtocol::CmpJson => Arc::new(cmp_json(account, ctx)?),
        CarrierProtocol::OneLink => Arc::new(onelink::OneLink::new(account, ctx)?),
        CarrierProtocol::Ctcc5gcmp => Arc::new(ctcc::Ctcc::new(account, ctx)?),
        CarrierProtocol::ControlCenter => {
            Arc::new(control_center::ControlCenter::new(account, ctx)?)
        }
        CarrierProtocol::OneNce => Arc::new(onence::OneNce::new(account, ctx)?),
        CarrierProtocol::Emnify => Arc::new(emnify::Emnify::new(account, ctx)?),
    })
}

/// The account's credential `field` (checked present by [`build_adapter`]; an adapter built
/// otherwise still gets a clear `Auth` error naming the field, never its value).
pub(crate) fn credential(
    account: &CarrierAccount,
    field: &str,
) -> Result<domain::Secret, GatewayError> {
    account
        .credentials
        .get(field)
        .filter(|s| !s.is_empty())
        .cloned()
        .ok_or_else(|| {
            GatewayError::Auth(format!(
                "{} needs credentials field `{field}`",
                account.protocol
            ))
        })
}

/// The project's own protocol at the account's URL, within the account's budget.
fn cmp_json(account: &CarrierAccount, ctx: &AdapterContext) -> Result<HttpGateway, GatewayError> {
    let mut config = GatewayConfig::new(account.base_url.clone());
    config.timeout = Duration::from_millis(u64::from(account.limits.timeout_ms));
    config
        .rate_limits
        .insert(account.carrier_id, account.limits.rate_limit_per_sec);
    config.max_rate_wait = ctx.max_rate_wait;
    config.retry = ctx.retry.clone();
    HttpGateway::new(config, ctx.limiter.clone())
}

/// The longest a stop or start can take through the default gateway or any of `accounts`,
/// by the clients' own timers (see [`GatewayConfig::command_bound`]); stop/resume sets its call
/// deadline from it. A carrier added later with a longer timeout is cut off at this bound: its
/// intent closes `interrupted` and the next evaluation asks again, which is safe.
pub fn command_bound(default: &GatewayConfig, accounts: &[CarrierAccount]) -> Duration {
    accounts
        .iter()
        .map(|a| {
            let mut c = default.clone();
            c.timeout = Duration::from_millis(u64::from(a.limits.timeout_ms));
            c.command_bound()
        })
        .fold(default.command_bound(), Duration::max)
}
