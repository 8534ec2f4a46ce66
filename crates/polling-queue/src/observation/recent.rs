//! What the monitoring and the alert evaluator need beyond the totals of `stats.rs`:
//! counts per minute (one hash per task type and UTC hour, `{MM}:{outcome}` fields, TTL 3 h),
//! a duration histogram (bucket fields `hist:{upper_ms}` in `polling:stats:{type}`) for the p95,
//! and the gateway's outcomes per minute.

use crate::{Keys, QueueError, RedisKey, TaskOutcome};
use chrono::{DateTime, Duration as ChronoDuration, Timelike, Utc};
use domain::TaskType;
use fred::prelude::*;
use serde::Serialize;
use std::collections::HashMap;

/// Upper bounds (ms) of the duration histogram; a run longer than the last lands in `inf`.
pub const DURATION_BUCKETS_MS: [u64; 12] = [
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000,
];

/// How long a per-hour minute hash lives: windows up to two hours can be read.
pub(crate) const MINUTES_TTL_SECS: i64 = 3 * 3600;

/// The hash field of the histogram bucket of a run of `ms`.
pub(crate) fn bucket_field(ms: u64) -> String {
    match DURATION_BUCKETS_MS.iter().find(|b| ms <= **b) {
        Some(b) => format!("hist:{b}"),
        None => "hist:inf".to_owned(),
    }
}

/// The count of `outcome` among one minute's fields (none counted: 0).
fn count(fields: &HashMap<String, u64>, outcome: &str) -> u64 {
    fields.get(outcome).copied().unwrap_or(0)
}

pub(crate) fn hour_of(at: DateTime<Utc>) -> String {
    at.format("%Y%m%d%H").to_string()
}

/// Queues, in `pipe`, the minute counter of one run (the caller sends the pipeline).
/// The minute hash and field a run at `at` counts in.
pub(crate) fn minute_field(
    keys: &Keys,
    task: TaskType,
    outcome: TaskOutcome,
    at: DateTime<Utc>,
) -> (String, String) {
    let key = keys.render(&RedisKey::StatsMinutes {
        task,
        hour: hour_of(at),
    });
    (key, format!("{:02}:{}", at.minute(), outcome.as_str()))
}

/// Counts of one minute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MinuteCounts {
    pub success: u64,
    pub failure: u64,
    pub requeued_full: u64,
}

impl MinuteCounts {
    /// Polls that reached the gateway (success + failure).
    pub fn polls(&self) -> u64 {
        self.success + self.failure
    }
}

/// Gateway outcomes of one minute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GatewayCounts {
    pub ok: u64,
    pub error: u64,
    pub throttled: u64,
}

impl GatewayCounts {
    pub fn calls(&self) -> u64 {
        self.ok + self.error + self.throttled
    }
}

/// How a gateway call ended, for [`RecentCounters::record_gateway`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayOutcome {
    Ok,
    Error,
    Throttled,
}

impl GatewayOutcome {
    pub const fn as_str(self) -> &'static str {
        match self {
            GatewayOutcome::Ok => "ok",
            GatewayOutcome::Error => "error",
            GatewayOutcome::Throttled => "throttled",
        }
    }
}

/// Reads the minute counters and the histogram; records gateway outcomes.
#[derive(Debug, Clone)]
pub struct RecentCounters {
    pool: Pool,
    keys: Keys,
}

impl RecentCounters {
    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self { pool, keys }
    }

    /// The carriers' calls per minute, on the same connections.
    pub fn carrier_calls(&self) -> super::carrier_budget::CarrierCalls {
        super::carrier_budget::CarrierCalls::new(self.pool.clone(), self.keys.clone())
    }

    /// The carriers' budget figures, on the same connections.
    pub fn budget_board(&self) -> super::carrier_budget::CarrierBudgetBoard {
        super::carrier_budget::CarrierBudgetBoard::new(self.pool.clone(), self.keys.clone())
    }

    /// Counts one gateway call at `at` (one round trip).
    pub async fn record_gateway(
        &self,
        outcome: GatewayOutcome,
        at: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        let key = self
            .keys
            .render(&RedisKey::GatewayMinutes { hour: hour_of(at) });
        let field = format!("{:02}:{}", at.minute(), outcome.as_str());
        let pipe = self.pool.next().pipeline();
        let _: () = pipe.hincrby(key.as_str(), field, 1).await?;
        let _: () = pipe.expire(key.as_str(), MINUTES_TTL_SECS, None).await?;
        let _: Vec<i64> = pipe.all().await?;
        Ok(())
    }

    /// The minutes `[end - minutes, end)` (whole minutes; the current, partial one excluded
    /// when `end` is the start of it), oldest first, each with the counts `counts` makes of its
    /// fields (outcome -> count).
    async fn minutes<C>(
        &self,
        render: impl Fn(String) -> String,
        end: DateTime<Utc>,
        minutes: u32,
        counts: impl Fn(&HashMap<String, u64>) -> C,
    ) -> Result<Vec<(DateTime<Utc>, C)>, QueueError> {
        let end = end
            .with_second(0)
            .and_then(|t| t.with_nanosecond(0))
            .unwrap_or(end);
        let start = end - ChronoDuration::minutes(i64::from(minutes));
        let mut hours: Vec<String> = Vec::new();
        let mut t = start;
        while t < end {
            let h = hour_of(t);
            if hours.last() != Some(&h) {
                hours.push(h);
            }
            t += ChronoDuration::minutes(1);
        }
        let mut by_hour: HashMap<String, HashMap<String, String>> = HashMap::new();
        for h in hours {
            let fields: HashMap<String, String> = self.pool.hgetall(render(h.clone())).await?;
            by_hour.insert(h, fields);
        }
        let mut out = Vec::new();
        let mut t = start;
        while t < end {
            let prefix = format!("{:02}:", t.minute());
            let mut fields = HashMap::new();
            if let Some(hour) = by_hour.get(&hour_of(t)) {
                for (field, raw) in hour {
                    if let Some(outcome) = field.strip_prefix(&prefix) {
                        fields.insert(outcome.to_owned(), raw.parse().unwrap_or(0));
                    }
                }
            }
            out.push((t, counts(&fields)));
            t += ChronoDuration::minutes(1);
        }
        Ok(out)
    }

    /// Task outcomes of each of the last `minutes` whole minutes before `end`, oldest first.
    pub async fn task_minutes(
        &self,
        task: TaskType,
        end: DateTime<Utc>,
        minutes: u32,
    ) -> Result<Vec<(DateTime<Utc>, MinuteCounts)>, QueueError> {
        let render = |hour| self.keys.render(&RedisKey::StatsMinutes { task, hour });
        self.minutes(render, end, minutes, |fields| MinuteCounts {
            success: count(fields, TaskOutcome::Success.as_str()),
            failure: count(fields, TaskOutcome::Failure.as_str()),
            requeued_full: count(fields, TaskOutcome::RequeuedFull.as_str()),
        })
        .await
    }

    /// Gateway outcomes of each of the last `minutes` whole minutes before `end`.
    pub async fn gateway_minutes(
        &self,
        end: DateTime<Utc>,
        minutes: u32,
    ) -> Result<Vec<(DateTime<Utc>, GatewayCounts)>, QueueError> {
        let render = |hour| self.keys.render(&RedisKey::GatewayMinutes { hour });
        self.minutes(render, end, minutes, |fields| GatewayCounts {
            ok: count(fields, GatewayOutcome::Ok.as_str()),
            error: count(fields, GatewayOutcome::Error.as_str()),
            throttled: count(fields, GatewayOutcome::Throttled.as_str()),
        })
        .await
    }

    /// The duration histogram of `task`: `(upper bound ms, None = inf)` -> runs, ascending.
    pub async fn histogram(&self, task: TaskType) -> Result<Vec<(Option<u64>, u64)>, QueueError> {
        let key = self.keys.render(&RedisKey::Stats { task });
        let fields: Vec<String> = DURATION_BUCKETS_MS
            .iter()
            .map(|b| format!("hist:{b}"))
            .chain(std::iter::once("hist:inf".to_owned()))
            .collect();
        let values: Vec<Option<String>> = self.pool.hmget(key.as_str(), fields).await?;
        let bounds = DURATION_BUCKETS_MS.iter().map(|b| Some(*b)).chain([None]);
        Ok(bounds
            .zip(values)
            .map(|(b, v)| (b, v.and_then(|s| s.parse().ok()).unwrap_or(0)))
            .collect())
    }
}

/// The `q` quantile (0..1) of a histogram, as the upper bound of the bucket it falls in
/// (`None` when empty; the last finite bound when it falls in `inf`).
pub fn quantile_ms(histogram: &[(Option<u64>, u64)], q: f64) -> Option<u64> {
    let total: u64 = histogram.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (bound, n) in histogram {
        seen += n;
        if seen >= rank {
            return Some(bound.unwrap_or(DURATION_BUCKETS_MS[DURATION_BUCKETS_MS.len() - 1]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_quantiles() {
        assert_eq!(bucket_field(0), "hist:5");
        assert_eq!(bucket_field(26), "hist:50");
        assert_eq!(bucket_field(40_000), "hist:inf");
        let h = vec![(Some(10), 90), (Some(100), 5), (Some(1000), 5), (None, 0)];
        assert_eq!(quantile_ms(&h, 0.95), Some(100));
        assert_eq!(quantile_ms(&h, 0.5), Some(10));
        assert_eq!(quantile_ms(&[], 0.95), None);
    }
}
