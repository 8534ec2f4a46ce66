//! [`HttpGateway`]: the protocol over one pooled HTTP client.
//!
//! Every HTTP request is bounded by `timeout`. Queries (`realname`, `usage`, `packages`) are
//! tried once: their caller reschedules the card. `stop`/`start` are tried up to
//! `retry.attempts` times on retryable errors (timeout, throttled, 5xx, transport) with
//! exponential back-off and jitter, or after the carrier's `Retry-After` when it sends one
//! (up to `retry.max_retry_after`). Before each request a slot of the card's carrier's shared
//! budget (bucket = the carrier id) is reserved when a limiter and a non-zero rate are set:
//! queries wait their turn (up to `max_rate_wait`), stop/start pass the queries already booked
//! (`domain::CallClass`), and [`HttpGateway::dispatch_room`] tells the dispatch loop how many
//! polls the budget lets start, so that cards wait in their queues rather than in refused calls.
//!
//! Metrics: `cmp_gateway_requests_total{call, outcome}` per HTTP request (outcome `ok`,
//! `not_found`, `throttled`, `timeout`, `carrier_5xx`, `carrier_4xx`, `decode_error`,
//! `transport_error`), plus `outcome="rate_limited"` when the limiter refused a slot and no
//! request was made ([`GatewayError::RateLimited`]); `cmp_gateway_request_duration_seconds{call}` per HTTP request.

use crate::protocol::{
    CardRequest, NetworkAnswer, PackagesAnswer, RealNameAnswer, UsageAnswer, parse_month,
};
use crate::{CallKind, CarrierGateway, GatewayError};
use async_trait::async_trait;
use domain::{
    CallClass, CarrierId, CarrierPackage, MonthUsage, NetworkStatus, RateLimiter, RealNameStatus,
};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{Instrument, debug, warn};

mod budget;
mod failure;
mod retry;
pub(crate) use budget::honour_slot;
pub use budget::{DispatchRoom, Paced};
use failure::{check_iccid, from_reqwest};
pub(crate) use failure::{error_chain, retry_after};
pub use retry::RetryPolicy;

/// Settings of the client; `CMP_GATEWAY_URL`, `CMP_GATEWAY_TIMEOUT_MS`,
/// `CMP_GATEWAY_RATE_LIMIT` and `CMP_GATEWAY_RATE_LIMITS` fill the first four (the `settings`
/// crate reads them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// E.g. `http://127.0.0.1:7070`; the `/v1/cards/*` paths are appended.
    pub base_url: String,
    /// Bound of every HTTP request, connect to last body byte (default 5 s).
    pub timeout: Duration,
    /// Calls per second per carrier, shared by the whole cluster, for every carrier without
    /// an override; 0 = no limit.
    pub rate_limit_per_sec: u32,
    /// Per-carrier rates that replace the default (0 = no limit for that carrier). Each
    /// carrier has its own bucket, `polling:ratelimit:gateway:{carrier_id}`.
    pub rate_limits: BTreeMap<CarrierId, u32>,
    /// Longest wait for a rate-limit slot; beyond it the call reports `RateLimited` at once.
    pub max_rate_wait: Duration,
    pub retry: RetryPolicy,
}

impl GatewayConfig {
    /// The defaults of `docs/carriers/cmp-json.md` for a gateway at `base_url`.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            timeout: Duration::from_millis(5000),
            rate_limit_per_sec: 0,
            rate_limits: BTreeMap::new(),
            max_rate_wait: Duration::from_secs(2),
            retry: RetryPolicy::default(),
        }
    }
}

impl GatewayConfig {
    /// The longest a `stop` or `start` can take with these settings, by the client's own
    /// timers: every try waits for its rate-limit slot (`max_rate_wait`) and its request
    /// (`timeout`), and every retry for its back-off or the carrier's `Retry-After`, whichever
    /// bound is longer (`retry.max_delay`, `retry.max_retry_after`). With the defaults: 3 ×
    /// (2 s + 5 s) + 2 × 5 s = 31 s. Stop/resume sets its call deadline from it, which bounds
    /// how long a durable intent can be in flight.
    pub fn command_bound(&self) -> Duration {
        let tries = self.retry.attempts.max(1);
        let per_try = self.max_rate_wait.saturating_add(self.timeout);
        let per_retry = self.retry.max_delay.max(self.retry.max_retry_after);
        per_try
            .saturating_mul(tries)
            .saturating_add(per_retry.saturating_mul(tries - 1))
    }
}

/// The carrier gateway over HTTP/1.1 with keep-alive. Cheap to clone: clones share one
/// connection pool, so build one per process (or per carrier) and hand out `Arc`s or clones.
#[derive(Clone)]
pub struct HttpGateway {
    client: reqwest::Client,
    base: Arc<str>,
    config: Arc<GatewayConfig>,
    limiter: Option<Arc<dyn RateLimiter>>,
    /// The limited carriers this client called lately (for [`HttpGateway::dispatch_room`]).
    seen: Arc<budget::Seen>,
}

impl std::fmt::Debug for HttpGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpGateway")
            .field("config", &self.config)
            .field("limiter", &self.limiter.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpGateway {
    /// Builds the pooled client. `limiter`: the cluster-wide budget (Redis GCRA in production);
    /// `None` or `rate_limit_per_sec == 0` calls without one.
    pub fn new(
        config: GatewayConfig,
        limiter: Option<Arc<dyn RateLimiter>>,
    ) -> Result<Self, GatewayError> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(2)))
            // Connections stay warm between polls: a handler pool reuses them all day.
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true)
            .tcp_keepalive(Duration::from_secs(30))
            .no_proxy()
            .build()
            .map_err(|e| GatewayError::Transport(error_chain(&e)))?;
        Ok(Self {
            client,
            base: config.base_url.trim_end_matches('/').into(),
            config: Arc::new(config),
            limiter,
            seen: Arc::default(),
        })
    }

    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// The budget of `carrier`: its override, else the default.
    pub fn rate_of(&self, carrier: CarrierId) -> u32 {
        self.config
            .rate_limits
            .get(&carrier)
            .copied()
            .unwrap_or(self.config.rate_limit_per_sec)
    }

    /// One protocol call: a single try for queries, up to `retry.attempts` for commands.
    async fn call<T: DeserializeOwned>(
        &self,
        kind: CallKind,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<T, GatewayError> {
        let attempts = if kind.is_command() {
            self.config.retry.attempts.max(1)
        } else {
            1
        };
        self.config
            .retry
            .run(
                attempts,
                || self.attempt(kind, carrier, iccid),
                |err, tried, delay| {
                    warn!(call = %kind, iccid, attempt = tried, error = %err,
                        delay_ms = delay.as_millis() as u64, "gateway call failed, retrying");
                },
            )
            .await
    }

    /// [`request_once`](Self::request_once) in a `carrier_request` span: `debug`, so a poll's
    /// queries cost nothing while traces are off (and `CMP_LOG` is at `info`); with traces on
    /// it is exported when its poll or decision is.
    async fn attempt<T: DeserializeOwned>(
        &self,
        kind: CallKind,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<T, GatewayError> {
        let span = tracing::debug_span!(
            "carrier_request",
            call = kind.as_str(),
            carrier_id = carrier.get(),
            outcome = tracing::field::Empty
        );
        let result = self
            .request_once(kind, carrier, iccid)
            .instrument(span.clone())
            .await;
        span.record(
            "outcome",
            match &result {
                Ok(_) => "ok",
                Err(e) => e.outcome(),
            },
        );
        result
    }

    /// One HTTP request, after its rate-limit slot; records the metrics.
    async fn request_once<T: DeserializeOwned>(
        &self,
        kind: CallKind,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<T, GatewayError> {
        if let Err(e) = self.wait_for_slot(kind, carrier).await {
            record(kind, "rate_limited", None);
            return Err(e);
        }
        let started = Instant::now();
        let result = tokio::time::timeout(self.config.timeout, self.request(kind, iccid))
            .await
            .unwrap_or(Err(GatewayError::Timeout));
        if let Err(GatewayError::Throttled { retry_after }) = &result {
            crate::carriers::slow_down(self.limiter.as_deref(), carrier, *retry_after).await;
        }
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) => e.outcome(),
        };
        record(kind, outcome, Some(started.elapsed()));
        debug!(call = %kind, iccid, outcome, elapsed_ms = started.elapsed().as_millis() as u64, "gateway call");
        result
    }

    /// Takes a slot of the shared budget ([`honour_slot`]: fails open).
    async fn wait_for_slot(&self, kind: CallKind, carrier: CarrierId) -> Result<(), GatewayError> {
        let (Some(limiter), rate) = (&self.limiter, self.rate_of(carrier)) else {
            return Ok(());
        };
        if rate == 0 {
            return Ok(());
        }
        let bucket = carrier.to_string();
        self.seen.called(carrier);
        let class = if kind.is_command() {
            CallClass::Command
        } else {
            CallClass::Query
        };
        let reserved = limiter
            .reserve(&bucket, rate, class, self.config.max_rate_wait)
            .await;
        if class == CallClass::Query {
            self.seen.reserved();
        }
        honour_slot(reserved, kind.as_str(), carrier).await
    }

    async fn request<T: DeserializeOwned>(
        &self,
        kind: CallKind,
        iccid: &str,
    ) -> Result<T, GatewayError> {
        let url = format!("{}{}", self.base, kind.path());
        let resp = self
            .client
            .post(url)
            .json(&CardRequest {
                iccid: iccid.to_owned(),
            })
            .send()
            .await
            .map_err(from_reqwest)?;
        let status = resp.status();
        let retry_after = retry_after(resp.headers());
        let body = resp.bytes().await.map_err(from_reqwest)?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|e| GatewayError::Decode(e.to_string()));
        }
        Err(match status {
            StatusCode::NOT_FOUND => GatewayError::NotFound,
            StatusCode::TOO_MANY_REQUESTS => GatewayError::Throttled { retry_after },
            _ => GatewayError::Carrier {
                status: status.as_u16(),
                body: String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
            },
        })
    }
}

fn record(kind: CallKind, outcome: &'static str, elapsed: Option<Duration>) {
    metrics::counter!("cmp_gateway_requests_total", "call" => kind.as_str(), "outcome" => outcome)
        .increment(1);
    if let Some(d) = elapsed {
        metrics::histogram!("cmp_gateway_request_duration_seconds", "call" => kind.as_str())
            .record(d.as_secs_f64());
    }
}

#[async_trait]
impl CarrierGateway for HttpGateway {
    async fn realname(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<RealNameStatus, GatewayError> {
        let a: RealNameAnswer = self.call(CallKind::Realname, carrier, iccid).await?;
        check_iccid(CallKind::Realname, iccid, &a.iccid)?;
        Ok(a.real_name_status)
    }

    async fn usage(&self, carrier: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        let a: UsageAnswer = self.call(CallKind::Usage, carrier, iccid).await?;
        check_iccid(CallKind::Usage, iccid, &a.iccid)?;
        let month = parse_month(&a.month)
            .ok_or_else(|| GatewayError::Decode(format!("bad month `{}`", a.month)))?;
        // Beyond a petabyte the answer is refused rather than counted: it would overflow the
        // deduction arithmetic and stop the card on nonsense.
        let month_total_mb = crate::carriers::units::check_month_total(a.month_total_mb)
            .map_err(GatewayError::Decode)?;
        Ok(MonthUsage {
            month,
            month_total_mb,
        })
    }

    async fn packages(
        &self,
        carrier: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        let a: PackagesAnswer = self.call(CallKind::Packages, carrier, iccid).await?;
        check_iccid(CallKind::Packages, iccid, &a.iccid)?;
        Ok(a.packages)
    }

    async fn stop(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        let a: NetworkAnswer = self.call(CallKind::Stop, carrier, iccid).await?;
        check_iccid(CallKind::Stop, iccid, &a.iccid)?;
        Ok(a.network_status)
    }

    async fn start(&self, carrier: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        let a: NetworkAnswer = self.call(CallKind::Start, carrier, iccid).await?;
        check_iccid(CallKind::Start, iccid, &a.iccid)?;
        Ok(a.network_status)
    }

    /// The protocol has no authentication and no harmless call of its own: a real-name query
    /// of a card no carrier issues. The gateway answering it, even with "unknown card", is up.
    async fn probe(&self, carrier: CarrierId) -> Result<(), GatewayError> {
        match self.realname(carrier, PROBE_ICCID).await {
            Ok(_) | Err(GatewayError::NotFound) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The ICCID of [`HttpGateway`]'s probe: 20 zeros, a number no issuer assigns.
const PROBE_ICCID: &str = "00000000000000000000";

#[cfg(test)]
mod tests;
