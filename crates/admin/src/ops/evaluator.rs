//! The alert evaluator: one pass over the enabled rules, run every 30 s by the worker under a
//! singleton lease. For each rule it computes the metric over the rule's window; a rule that
//! holds and has no open firing fires (a history row, a webhook) unless it fired within its
//! cool-down; a rule that no longer holds resolves its open firing (`resolved_at`, a webhook).
//! Webhooks are spawned, so the pass never waits for a receiver.

use super::alert_metrics::MetricReader;
use super::webhook::{AlertState, WebhookBody, WebhookNotifier};
use crate::{AdminError, Chain};
use domain::store::AlertStore;
use domain::{AlertRule, AlertRuleId, Clock};
use std::sync::Arc;
use std::time::Duration;

/// How often the worker runs a pass.
pub const EVALUATE_EVERY: Duration = Duration::from_secs(30);

/// The Prometheus gauge of open firings.
pub const FIRING_GAUGE: &str = "cmp_alerts_firing";

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvaluationReport {
    pub evaluated: usize,
    pub fired: Vec<AlertRuleId>,
    pub resolved: Vec<AlertRuleId>,
    /// Held but fired within the cool-down.
    pub suppressed: Vec<AlertRuleId>,
    /// The metric could not be read (the rule is left as it is).
    pub errors: Vec<(AlertRuleId, String)>,
    /// Open firings after the pass.
    pub firing: usize,
}

/// Evaluates alert rules.
#[derive(Clone)]
pub struct AlertEvaluator {
    store: Arc<dyn AlertStore>,
    metrics: MetricReader,
    notifier: WebhookNotifier,
    clock: Arc<dyn Clock>,
}

impl AlertEvaluator {
    pub fn new(
        store: Arc<dyn AlertStore>,
        metrics: MetricReader,
        notifier: WebhookNotifier,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            metrics,
            notifier,
            clock,
        }
    }

    /// One pass over every enabled rule.
    pub async fn evaluate(&self) -> Result<EvaluationReport, AdminError> {
        let mut report = EvaluationReport::default();
        for rule in self.store.enabled_rules().await? {
            report.evaluated += 1;
            if let Err(e) = self.evaluate_rule(&rule, &mut report).await {
                tracing::warn!(rule = %rule.id, metric = %rule.rule.metric, error = %Chain(&e), "alert rule not evaluated");
                report.errors.push((rule.id, Chain(&e).to_string()));
            }
        }
        report.firing = self.store.open_firings().await?.len();
        metrics::gauge!(FIRING_GAUGE).set(report.firing as f64);
        Ok(report)
    }

    async fn evaluate_rule(
        &self,
        rule: &AlertRule,
        report: &mut EvaluationReport,
    ) -> Result<(), AdminError> {
        let value = self.metrics.value(rule).await?;
        let holds = rule.rule.operator.holds(value, rule.rule.threshold);
        let open = self.store.open_firing(rule.id).await?;
        let now = self.clock.now();
        match (holds, open) {
            (true, Some(_)) | (false, None) => {}
            (true, None) => {
                let cooldown = chrono::Duration::seconds(i64::from(rule.rule.cooldown_secs));
                if let Some(last) = self.store.last_fired_at(rule.id).await?
                    && now - last < cooldown
                {
                    report.suppressed.push(rule.id);
                    return Ok(());
                }
                let history = self.store.record_firing(rule.id, value, now).await?;
                tracing::warn!(rule = %rule.id, name = rule.rule.name, metric = %rule.rule.metric, %value, threshold = %rule.rule.threshold, "alert fired");
                let body = WebhookBody::new(rule, &history, value, AlertState::Fired, now);
                let _ = self.notifier.spawn(rule, body);
                report.fired.push(rule.id);
            }
            (false, Some(history)) => {
                self.store.resolve(rule.id, now).await?;
                tracing::info!(rule = %rule.id, name = rule.rule.name, %value, "alert resolved");
                let body = WebhookBody::new(rule, &history, value, AlertState::Resolved, now);
                let _ = self.notifier.spawn(rule, body);
                report.resolved.push(rule.id);
            }
        }
        Ok(())
    }
}
