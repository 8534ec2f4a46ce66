//! [`CarrierHttp`]: the one way an adapter reaches its platform.
//!
//! Each request first takes a slot of the carrier's shared budget (the Redis GCRA bucket named
//! by the carrier id, as [`crate::HttpGateway`] does; queries wait up to `max_rate_wait`,
//! stop/start pass the queries booked) and a permit of the carrier's concurrency bound
//! (`max_concurrent`, per process), then runs under the account's timeout. Whatever the HTTP
//! status, the answer comes back to the adapter, which alone knows its platform's error codes.
//!
//! Credentials never leave through here: URLs are cut out of transport errors (a token request
//! may carry a password in its query string), and [`CarrierHttp::scrub`] replaces every
//! credential value and every token the adapter registered by `***` in any text that goes into
//! an error, a log line or a metric.
//!
//! Metrics: `cmp_gateway_requests_total{call, outcome}` and
//! `cmp_gateway_request_duration_seconds{call}` as the project's own client records them, plus
//! `cmp_carrier_requests_total{carrier, protocol, call, outcome}` and
//! `cmp_carrier_answer_errors_total{carrier, protocol, kind}` for answers not understood.

use crate::carriers::AdapterContext;
use crate::client::{error_chain, honour_slot};
use crate::{AnswerFault, GatewayError, RetryPolicy};
use domain::{CallClass, CarrierAccount, CarrierId, CarrierProtocol, RateLimiter};
use reqwest::header::HeaderMap;
use serde::de::DeserializeOwned;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tracing::{debug, warn};

/// The start of a body kept for an error text.
const BODY_EXCERPT: usize = 300;

/// One answer, whatever its HTTP status.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: bytes::Bytes,
}

impl Answer {
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// `Retry-After` in seconds, when sent.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        crate::client::retry_after(&self.headers)
    }

    /// Whether the body claims to be (or looks like) HTML: a proxy's or a login page.
    pub(crate) fn looks_like_html(&self) -> bool {
        let ct = self
            .headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if ct.contains("html") {
            return true;
        }
        let head: Vec<u8> = self
            .body
            .iter()
            .skip_while(|b| b.is_ascii_whitespace())
            .take(15)
            .map(u8::to_ascii_lowercase)
            .collect();
        head.starts_with(b"<!doctype") || head.starts_with(b"<html")
    }
}

/// The HTTP side of one carrier's adapter. Cheap to clone.
#[derive(Clone)]
pub(crate) struct CarrierHttp {
    client: reqwest::Client,
    pub(crate) carrier: CarrierId,
    pub(crate) protocol: CarrierProtocol,
    base: Arc<str>,
    timeout: Duration,
    rate: u32,
    limiter: Option<Arc<dyn RateLimiter>>,
    max_rate_wait: Duration,
    permits: Option<Arc<Semaphore>>,
    pub(crate) retry: RetryPolicy,
    /// Texts never to show: the credential values and the tokens issued to us.
    secrets: Arc<RwLock<Vec<String>>>,
    carrier_label: Arc<str>,
}

impl std::fmt::Debug for CarrierHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CarrierHttp")
            .field("carrier", &self.carrier)
            .field("protocol", &self.protocol)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl CarrierHttp {
    pub(crate) fn new(
        account: &CarrierAccount,
        ctx: &AdapterContext,
    ) -> Result<Self, GatewayError> {
        let timeout = Duration::from_millis(u64::from(account.limits.timeout_ms.max(1)));
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(2)))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .no_proxy()
            .build()
            .map_err(|e| GatewayError::Transport(error_chain(&e)))?;
        let max = account.limits.max_concurrent;
        Ok(Self {
            client,
            carrier: account.carrier_id,
            protocol: account.protocol,
            base: account.base_url.trim_end_matches('/').into(),
            timeout,
            rate: account.limits.rate_limit_per_sec,
            limiter: ctx.limiter.clone(),
            max_rate_wait: ctx.max_rate_wait,
            permits: (max > 0).then(|| Arc::new(Semaphore::new(max as usize))),
            retry: ctx.retry.clone(),
            secrets: Arc::new(RwLock::new(
                account
                    .credentials
                    .values()
                    .map(|s| s.expose().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect(),
            )),
            carrier_label: account.carrier_id.to_string().into(),
        })
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The platform's API root joined with `path` (which starts with `/`).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Registers a text (a token the platform issued) that must never show in an error or log.
    pub(crate) fn add_secret(&self, value: &str) {
        if value.is_empty() {
            return;
        }
        let mut s = self.secrets.write().unwrap_or_else(|p| p.into_inner());
        if !s.iter().any(|v| v == value) {
            // Old tokens stay listed: a late log line may still carry one. Bounded.
            if s.len() > 64 {
                s.remove(0);
            }
            s.push(value.to_owned());
        }
    }

    /// `text` with every credential value and registered token replaced by `***`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let secrets = self.secrets.read().unwrap_or_else(|p| p.into_inner());
        let mut out = text.to_owned();
        for s in secrets.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
        out
    }

    /// The start of the answer's body, scrubbed, for an error text.
    pub(crate) fn excerpt(&self, answer: &Answer) -> String {
        let end = answer.body.len().min(BODY_EXCERPT);
        self.scrub(&String::from_utf8_lossy(&answer.body[..end]))
    }

    /// An answer not understood: counted (`cmp_carrier_answer_errors_total`) and described.
    pub(crate) fn fault(&self, kind: AnswerFault, detail: impl AsRef<str>) -> GatewayError {
        metrics::counter!("cmp_carrier_answer_errors_total",
            "carrier" => self.carrier_label.to_string(),
            "protocol" => self.protocol.as_str(),
            "kind" => kind.as_str())
        .increment(1);
        let detail = self.scrub(detail.as_ref());
        warn!(carrier = %self.carrier, protocol = %self.protocol, kind = kind.as_str(), detail = %detail,
            "carrier answer not understood");
        GatewayError::Unintelligible { kind, detail }
    }

    /// An HTML page (a proxy's, a maintenance or login page) is never the platform's answer:
    /// [`AnswerFault::NotJson`], with its start for the log.
    pub(crate) fn refuse_html(&self, what: &str, answer: &Answer) -> Result<(), GatewayError> {
        if !answer.looks_like_html() {
            return Ok(());
        }
        Err(self.fault(
            AnswerFault::NotJson,
            format!(
                "{what}: an HTML page (HTTP {}): {}",
                answer.status,
                self.excerpt(answer)
            ),
        ))
    }

    /// Decodes a success body as JSON; an HTML page, an empty or non-JSON body, or a body of
    /// the wrong shape is [`GatewayError::Unintelligible`].
    pub(crate) fn json<T: DeserializeOwned>(
        &self,
        what: &str,
        answer: &Answer,
    ) -> Result<T, GatewayError> {
        self.refuse_html(what, answer)?;
        serde_json::from_slice(&answer.body).map_err(|e| {
            let kind = match e.classify() {
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                    AnswerFault::NotJson
                }
                serde_json::error::Category::Data => {
                    if e.to_string().starts_with("missing field") {
                        AnswerFault::MissingField
                    } else {
                        AnswerFault::BadValue
                    }
                }
                serde_json::error::Category::Io => AnswerFault::NotJson,
            };
            self.fault(kind, format!("{what}: {e}"))
        })
    }

    /// One query request (realname, usage, a token, a list page): waits for its budget slot
    /// and permit, runs under the timeout; the answer whatever its status.
    pub(crate) async fn query(
        &self,
        call: &'static str,
        req: reqwest::RequestBuilder,
    ) -> Result<Answer, GatewayError> {
        self.send(call, CallClass::Query, req).await
    }

    /// One command request (stop, start): as [`Self::query`], passing queries in the budget.
    pub(crate) async fn command(
        &self,
        call: &'static str,
        req: reqwest::RequestBuilder,
    ) -> Result<Answer, GatewayError> {
        self.send(call, CallClass::Command, req).await
    }

    /// [`Self::command`] when `command`, else [`Self::query`].
    pub(crate) async fn exchange(
        &self,
        call: &'static str,
        command: bool,
        req: reqwest::RequestBuilder,
    ) -> Result<Answer, GatewayError> {
        let class = if command {
            CallClass::Command
        } else {
            CallClass::Query
        };
        self.send(call, class, req).await
    }

    async fn send(
        &self,
        call: &'static str,
        class: CallClass,
        req: reqwest::RequestBuilder,
    ) -> Result<Answer, GatewayError> {
        if let Err(e) = self.wait_for_slot(call, class).await {
            self.record(call, e.outcome(), None);
            return Err(e);
        }
        let _permit = match &self.permits {
            Some(p) => Some(p.clone().acquire_owned().await.map_err(|_| {
                GatewayError::Transport("the carrier's call permits are closed".to_owned())
            })?),
            None => None,
        };
        let started = Instant::now();
        let result = tokio::time::timeout(self.timeout, async {
            let resp = req.send().await.map_err(|e| self.transport_error(e))?;
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let body = resp.bytes().await.map_err(|e| self.transport_error(e))?;
            Ok(Answer {
                status,
                headers,
                body,
            })
        })
        .await
        .unwrap_or(Err(GatewayError::Timeout));
        let outcome = match &result {
            Ok(a) if a.is_success() => "ok",
            Ok(a) if a.status == 429 => "throttled",
            Ok(a) if a.status >= 500 => "carrier_5xx",
            Ok(_) => "carrier_4xx",
            Err(e) => e.outcome(),
        };
        self.record(call, outcome, Some(started.elapsed()));
        debug!(carrier = %self.carrier, protocol = %self.protocol, call, outcome,
            elapsed_ms = started.elapsed().as_millis() as u64, "carrier call");
        result
    }

    fn record(&self, call: &'static str, outcome: &'static str, elapsed: Option<Duration>) {
        metrics::counter!("cmp_gateway_requests_total", "call" => call, "outcome" => outcome)
            .increment(1);
        metrics::counter!("cmp_carrier_requests_total",
            "carrier" => self.carrier_label.to_string(),
            "protocol" => self.protocol.as_str(),
            "call" => call,
            "outcome" => outcome)
        .increment(1);
        if let Some(d) = elapsed {
            metrics::histogram!("cmp_gateway_request_duration_seconds", "call" => call)
                .record(d.as_secs_f64());
        }
    }

    /// Takes a slot of the carrier's shared budget; fails open when the limiter cannot answer
    /// (as the project's own client does: the platform still refuses over its quota).
    async fn wait_for_slot(
        &self,
        call: &'static str,
        class: CallClass,
    ) -> Result<(), GatewayError> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        if self.rate == 0 {
            return Ok(());
        }
        let reserved = limiter
            .reserve(&self.carrier_label, self.rate, class, self.max_rate_wait)
            .await;
        honour_slot(reserved, call, self.carrier).await
    }

    /// Runs a stop/start attempt up to `retry.attempts` times on retryable errors, after the
    /// back-off or the platform's `Retry-After` (a longer wait than `retry.max_retry_after`,
    /// such as a change lock of minutes, ends the tries at once: the caller decides later).
    pub(crate) async fn retry_command<T, F, Fut>(
        &self,
        call: &'static str,
        attempt: F,
    ) -> Result<T, GatewayError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, GatewayError>>,
    {
        self.retry
            .run(self.retry.attempts.max(1), attempt, |err, tried, delay| {
                warn!(carrier = %self.carrier, protocol = %self.protocol, call, attempt = tried,
                    error = %err, delay_ms = delay.as_millis() as u64, "carrier call failed, retrying");
            })
            .await
    }

    fn transport_error(&self, e: reqwest::Error) -> GatewayError {
        let e = e.without_url();
        if e.is_timeout() {
            GatewayError::Timeout
        } else {
            GatewayError::Transport(self.scrub(&error_chain(&e)))
        }
    }
}
