//! Alert webhooks: a JSON body signed with the rule's secret (HMAC-SHA256, hex, in
//! [`SIGNATURE_HEADER`] as `sha256=<hex>`), POSTed with a timeout and retried with exponential
//! back-off and jitter (`backon`). Delivery runs in a spawned task, so a slow or dead receiver
//! never holds the evaluator; the history row's `notified` / `resolve_notified` (and
//! `notify_error`) record the outcome.

use backon::{ExponentialBuilder, Retryable};
use chrono::{DateTime, Utc};
use domain::store::AlertStore;
use domain::{
    AlertHistory, AlertMetric, AlertOperator, AlertRule, AlertRuleId, StopReason, TaskType,
};
use hmac::{Hmac, Mac};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::sync::Arc;
use std::time::Duration;

/// The header carrying the body's signature.
pub const SIGNATURE_HEADER: &str = "x-cmp-signature";

/// How deliveries are tried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WebhookSettings {
    /// Per attempt.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub retries: usize,
    /// First back-off; doubles each retry, with jitter, up to `max_delay`.
    pub min_delay: Duration,
    pub max_delay: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            retries: 5,
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// `fired` or `resolved`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertState {
    Fired,
    Resolved,
}

/// The JSON body of a webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookBody {
    pub rule_id: AlertRuleId,
    pub rule_name: String,
    pub metric: AlertMetric,
    pub task_type: Option<TaskType>,
    pub stop_reason: Option<StopReason>,
    pub operator: AlertOperator,
    /// JSON numbers, a fraction only where the figure has one.
    #[serde(with = "domain::figure")]
    pub value: Decimal,
    #[serde(with = "domain::figure")]
    pub threshold: Decimal,
    pub state: AlertState,
    /// The history row.
    pub history_id: i64,
    pub fired_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// When this notification was made.
    pub at: DateTime<Utc>,
}

impl WebhookBody {
    /// The notification of `history` (a firing of `rule`) as `state`, with the metric's
    /// `value` now, made at `at`.
    pub fn new(
        rule: &AlertRule,
        history: &AlertHistory,
        value: Decimal,
        state: AlertState,
        at: DateTime<Utc>,
    ) -> Self {
        WebhookBody {
            rule_id: rule.id,
            rule_name: rule.rule.name.clone(),
            metric: rule.rule.metric,
            task_type: rule.rule.task_type,
            stop_reason: rule.rule.stop_reason,
            operator: rule.rule.operator,
            value,
            threshold: rule.rule.threshold,
            state,
            history_id: history.id,
            fired_at: history.fired_at,
            resolved_at: (state == AlertState::Resolved).then_some(at),
            at,
        }
    }
}

/// `sha256=<hex HMAC-SHA256 of body under secret>`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + bytes.len() * 2);
    out.push_str("sha256=");
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Whether `signature` (the header's value) is the body's, compared in constant time.
pub fn verify(secret: &str, body: &[u8], signature: &str) -> bool {
    let Some(hex) = signature.strip_prefix("sha256=") else {
        return false;
    };
    let Ok(bytes) = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or(())
        })
        .collect::<Result<Vec<u8>, ()>>()
    else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&bytes).is_ok()
}

/// Why the notifier could not be built or a delivery failed. A delivery's text (its `Display`,
/// the transport's own words) is what the history row's `notify_error` records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The HTTP client could not be built.
    #[error("webhook client")]
    Client(#[source] reqwest::Error),
    /// The body could not be encoded.
    #[error(transparent)]
    Encode(serde_json::Error),
    /// The request got no answer (connection refused, timeout, ...).
    #[error(transparent)]
    Send(reqwest::Error),
    /// The receiver answered, but not with a 2xx.
    #[error("receiver answered {0}")]
    Status(reqwest::StatusCode),
}

/// Sends webhooks in the background.
#[derive(Clone)]
pub struct WebhookNotifier {
    client: reqwest::Client,
    store: Arc<dyn AlertStore>,
    settings: WebhookSettings,
}

impl WebhookNotifier {
    pub fn new(
        store: Arc<dyn AlertStore>,
        settings: WebhookSettings,
    ) -> Result<Self, WebhookError> {
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .build()
            .map_err(WebhookError::Client)?;
        Ok(Self {
            client,
            store,
            settings,
        })
    }

    /// Delivers `body` to the rule's URL in a spawned task (nothing when the rule has none) and
    /// records the outcome on the history row.
    pub fn spawn(
        &self,
        rule: &AlertRule,
        body: WebhookBody,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let url = rule.rule.webhook_url.clone()?;
        let secret = rule.rule.webhook_secret.clone().unwrap_or_default();
        let this = self.clone();
        Some(tokio::spawn(async move {
            let resolution = body.state == AlertState::Resolved;
            let history_id = body.history_id;
            let outcome = this.deliver(&url, &secret, &body).await;
            let (delivered, error) = match outcome {
                Ok(()) => (true, None),
                Err(e) => {
                    tracing::warn!(rule = %body.rule_id, url, error = %crate::Chain(&e), "alert webhook gave up");
                    (false, Some(e.to_string()))
                }
            };
            metrics::counter!("cmp_alert_webhooks_total", "outcome" => if delivered { "delivered" } else { "failed" })
                .increment(1);
            if let Err(e) = this
                .store
                .set_notified(history_id, resolution, delivered, error)
                .await
            {
                tracing::warn!(history_id, error = %e, "cannot record the webhook outcome");
            }
        }))
    }

    /// POSTs until a 2xx, retrying with back-off; the last error when every try failed.
    pub async fn deliver(
        &self,
        url: &str,
        secret: &str,
        body: &WebhookBody,
    ) -> Result<(), WebhookError> {
        let bytes = serde_json::to_vec(body).map_err(WebhookError::Encode)?;
        let signature = sign(secret, &bytes);
        let attempt = || async {
            let res = self
                .client
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(SIGNATURE_HEADER, signature.as_str())
                .body(bytes.clone())
                .send()
                .await
                .map_err(WebhookError::Send)?;
            if res.status().is_success() {
                Ok(())
            } else {
                Err(WebhookError::Status(res.status()))
            }
        };
        let backoff = ExponentialBuilder::default()
            .with_jitter()
            .with_min_delay(self.settings.min_delay)
            .with_max_delay(self.settings.max_delay)
            .with_max_times(self.settings.retries);
        attempt
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .notify(|e: &WebhookError, after: Duration| {
                tracing::debug!(url, error = %crate::Chain(e), retry_in_ms = after.as_millis() as u64, "alert webhook failed; retrying");
            })
            .await
    }
}
