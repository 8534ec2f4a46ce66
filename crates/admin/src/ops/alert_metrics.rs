//! The value of an alert rule's metric right now, over its window: from the shard queues, the
//! per-minute counters, the state log, the initializer's progress and the carriers' budget
//! figures (`polling:carrier:budget`).

use crate::AdminError;
use domain::store::MonitoringStore;
use domain::{AlertMetric, AlertRule, Clock, TaskType};
use lifecycle::{CardInitializer, InitStatus};
use polling_queue::{CarrierBudgetBoard, PollingQueueManager, RecentCounters};
use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use std::sync::Arc;

/// Computes metric values; cheap to clone.
#[derive(Clone)]
pub struct MetricReader {
    pub(crate) store: Arc<dyn MonitoringStore>,
    pub(crate) queue: PollingQueueManager,
    pub(crate) recent: RecentCounters,
    pub(crate) initializer: CardInitializer,
    pub(crate) budget: CarrierBudgetBoard,
    pub(crate) clock: Arc<dyn Clock>,
}

fn ratio(part: u64, whole: u64) -> Decimal {
    if whole == 0 {
        return Decimal::ZERO;
    }
    (Decimal::from(part) / Decimal::from(whole)).round_dp(6)
}

impl MetricReader {
    pub fn new(
        store: Arc<dyn MonitoringStore>,
        queue: PollingQueueManager,
        recent: RecentCounters,
        initializer: CardInitializer,
        budget: CarrierBudgetBoard,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            queue,
            recent,
            initializer,
            budget,
            clock,
        }
    }

    /// The rule's metric: of its task type, or over every type when it names none (sums for
    /// counts, the maximum for the oldest due age, the pooled ratio for rates).
    pub async fn value(&self, rule: &AlertRule) -> Result<Decimal, AdminError> {
        let r = &rule.rule;
        let tasks: Vec<TaskType> = match r.task_type {
            Some(t) => vec![t],
            None => TaskType::ALL.to_vec(),
        };
        let now = self.clock.now();
        let window_secs = u32::try_from(r.window_secs.max(60)).unwrap_or(60);
        let minutes = window_secs.div_ceil(60);
        Ok(match r.metric {
            AlertMetric::DueBacklog | AlertMetric::QueueDepth | AlertMetric::OldestDueAge => {
                let mut sum = 0u64;
                let mut oldest = 0u64;
                for task in tasks {
                    let s = self.queue.queue_summary(task).await;
                    if s.missing_shards.len() as u32 == self.queue.settings().shard_count {
                        return Err(AdminError::ShardsUnreadable { task });
                    }
                    sum += if r.metric == AlertMetric::QueueDepth {
                        s.depth
                    } else {
                        s.due
                    };
                    oldest = oldest.max(s.oldest_due_age_secs);
                }
                if r.metric == AlertMetric::OldestDueAge {
                    Decimal::from(oldest)
                } else {
                    Decimal::from(sum)
                }
            }
            AlertMetric::FailureRate => {
                let (mut polls, mut failures) = (0, 0);
                for task in tasks {
                    for (_, c) in self
                        .recent
                        .task_minutes(task, now, minutes)
                        .await
                        .map_err(AdminError::Queue)?
                    {
                        polls += c.polls();
                        failures += c.failure;
                    }
                }
                ratio(failures, polls)
            }
            AlertMetric::GatewayErrorRate | AlertMetric::GatewayThrottleRate => {
                let (mut calls, mut hits) = (0, 0);
                for (_, c) in self
                    .recent
                    .gateway_minutes(now, minutes)
                    .await
                    .map_err(AdminError::Queue)?
                {
                    calls += c.calls();
                    hits += if r.metric == AlertMetric::GatewayErrorRate {
                        c.error
                    } else {
                        c.throttled
                    };
                }
                ratio(hits, calls)
            }
            AlertMetric::StopsPerMinute => {
                let since = now - chrono::Duration::seconds(i64::from(window_secs));
                let stops = self.store.stops_between(since, now).await?;
                let n: u64 = match r.stop_reason {
                    Some(reason) => stops.get(&reason).copied().unwrap_or(0),
                    None => stops.values().sum(),
                };
                let per_minute = n as f64 * 60.0 / f64::from(window_secs);
                Decimal::from_f64(per_minute)
                    .unwrap_or_default()
                    .round_dp(3)
            }
            AlertMetric::InitializerFailed => {
                let failed = self
                    .initializer
                    .progress()
                    .await
                    .map_err(AdminError::Lifecycle)?
                    .and_then(|p| p.status)
                    == Some(InitStatus::Failed);
                Decimal::from(u8::from(failed))
            }
            AlertMetric::CarrierRoundRatio => {
                let report = self.budget.read().await?.ok_or(AdminError::BudgetUnknown)?;
                Decimal::from_f64(report.worst_round_ratio())
                    .unwrap_or_default()
                    .round_dp(6)
            }
        })
    }
}
