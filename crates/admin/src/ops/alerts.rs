//! Alert rules (`/polling-alert-rules`, `/polling-alert-history`): CRUD with validation. The
//! evaluator that acts on them is in `evaluator.rs`.

use crate::{AdminError, FieldError};
use domain::store::{AlertStore, Page, Paged};
use domain::{AlertHistory, AlertMetric, AlertRule, AlertRuleId, AlertRuleInput};
use rust_decimal::Decimal;
use serde::Serialize;
use std::sync::Arc;

/// Longest window a rule may average over (the minute counters live three hours).
pub const MAX_WINDOW_SECS: i32 = 2 * 3600;
/// Shortest window: one evaluation period.
pub const MIN_WINDOW_SECS: i32 = 30;
pub const MAX_COOLDOWN_SECS: i32 = 7 * 24 * 3600;

/// A rule just created, with its webhook secret: the only answer that shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CreatedRule {
    #[serde(flatten)]
    pub rule: AlertRule,
    pub webhook_secret: String,
}

/// Alert rule CRUD.
#[derive(Clone)]
pub struct AlertService {
    store: Arc<dyn AlertStore>,
}

/// The rule's problems, one per field; empty when valid.
pub fn validate(input: &AlertRuleInput) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = input.name.trim();
    if name.is_empty() || name.chars().count() > 128 {
        errors.push(FieldError::new("/name", "must be 1 to 128 characters"));
    }
    if input.threshold < Decimal::ZERO {
        errors.push(FieldError::new("/threshold", "must not be negative"));
    }
    let is_rate = matches!(
        input.metric,
        AlertMetric::FailureRate | AlertMetric::GatewayErrorRate | AlertMetric::GatewayThrottleRate
    );
    if is_rate && input.threshold > Decimal::ONE {
        errors.push(FieldError::new(
            "/threshold",
            "a rate is a fraction between 0 and 1",
        ));
    }
    if !(MIN_WINDOW_SECS..=MAX_WINDOW_SECS).contains(&input.window_secs) {
        errors.push(FieldError::new(
            "/window_secs",
            format!("must be between {MIN_WINDOW_SECS} and {MAX_WINDOW_SECS}"),
        ));
    }
    if !(0..=MAX_COOLDOWN_SECS).contains(&input.cooldown_secs) {
        errors.push(FieldError::new(
            "/cooldown_secs",
            format!("must be between 0 and {MAX_COOLDOWN_SECS}"),
        ));
    }
    if input.task_type.is_some() && !input.metric.per_task_type() {
        errors.push(FieldError::new(
            "/task_type",
            format!("`{}` is not per task type; leave it null", input.metric),
        ));
    }
    if input.stop_reason.is_some() && input.metric != AlertMetric::StopsPerMinute {
        errors.push(FieldError::new(
            "/stop_reason",
            "only a stops_per_minute rule takes a stop reason",
        ));
    }
    if let Some(url) = &input.webhook_url
        && let Err(message) = validate_url(url)
    {
        errors.push(FieldError::new("/webhook_url", message));
    }
    if let Some(secret) = &input.webhook_secret
        && !(16..=128).contains(&secret.len())
    {
        errors.push(FieldError::new(
            "/webhook_secret",
            "must be 16 to 128 characters",
        ));
    }
    errors
}

/// Only absolute `http`/`https` URLs with a host, at most 512 characters.
pub fn validate_url(url: &str) -> Result<(), String> {
    if url.len() > 512 {
        return Err("must be at most 512 characters".into());
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("only http and https URLs are allowed".into());
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("the URL needs a host".into());
    }
    Ok(())
}

/// A fresh webhook secret: 64 hex characters (256 random bits).
pub fn new_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

impl AlertService {
    pub fn new(store: Arc<dyn AlertStore>) -> Self {
        Self { store }
    }

    pub async fn list(&self, page: Page) -> Result<Paged<AlertRule>, AdminError> {
        Ok(self.store.list_rules(page).await?)
    }

    pub async fn get(&self, id: AlertRuleId) -> Result<AlertRule, AdminError> {
        self.store
            .get_rule(id)
            .await?
            .ok_or_else(|| AdminError::NotFound(format!("alert rule {id}")))
    }

    pub async fn create(&self, mut input: AlertRuleInput) -> Result<CreatedRule, AdminError> {
        input.name = input.name.trim().to_owned();
        let errors = validate(&input);
        if !errors.is_empty() {
            return Err(AdminError::Invalid(errors));
        }
        let secret = input.webhook_secret.clone().unwrap_or_else(new_secret);
        input.webhook_secret = Some(secret.clone());
        let rule = self
            .store
            .insert_rule(&input)
            .await
            .map_err(AdminError::from_store)?;
        Ok(CreatedRule {
            rule,
            webhook_secret: secret,
        })
    }

    /// Replaces the rule; an absent `webhook_secret` keeps the current one.
    pub async fn update(
        &self,
        id: AlertRuleId,
        mut input: AlertRuleInput,
    ) -> Result<AlertRule, AdminError> {
        input.name = input.name.trim().to_owned();
        let errors = validate(&input);
        if !errors.is_empty() {
            return Err(AdminError::Invalid(errors));
        }
        self.get(id).await?;
        self.store
            .update_rule(id, &input)
            .await
            .map_err(AdminError::from_store)
    }

    pub async fn delete(&self, id: AlertRuleId) -> Result<(), AdminError> {
        if self.store.delete_rule(id).await? {
            Ok(())
        } else {
            Err(AdminError::NotFound(format!("alert rule {id}")))
        }
    }

    pub async fn history(
        &self,
        rule: Option<AlertRuleId>,
        page: Page,
    ) -> Result<Paged<AlertHistory>, AdminError> {
        Ok(self.store.history(rule, page).await?)
    }
}
