//! A carrier's budget as the cluster sees it: the calls every node made to each carrier, per
//! minute ([`CarrierCalls`], `polling:stats:carrier:calls:{hour}`), and the figures the
//! `carrier_budget` job last computed ([`CarrierBudgetBoard`], `polling:carrier:budget`).
//!
//! Each node adds what its carrier router counted since its last report (every few seconds,
//! one pipeline per node, not one command per call), so a minute's count is every node's
//! calls within a few seconds of that minute. One key per command: nothing crosses slots.

use super::recent::{MINUTES_TTL_SECS, hour_of};
use crate::{Keys, QueueError, RedisKey};
use chrono::{DateTime, Duration as ChronoDuration, Timelike, Utc};
use domain::{BudgetReport, CarrierId};
use fred::prelude::*;
use fred::types::{Expiration, Value};
use std::collections::HashMap;

/// How long the budget figures outlive the job that wrote them (it runs every minute).
pub const BUDGET_TTL_SECS: i64 = 600;

/// Calls per carrier per minute, summed over the nodes.
#[derive(Debug, Clone)]
pub struct CarrierCalls {
    pool: Pool,
    keys: Keys,
}

impl CarrierCalls {
    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self { pool, keys }
    }

    fn key(&self, hour: String) -> String {
        self.keys.render(&RedisKey::CarrierCallMinutes { hour })
    }

    /// Adds `calls` (carrier, calls made since the last report) to the minute of `at`: one
    /// pipeline, nothing sent when every count is 0.
    pub async fn record(
        &self,
        calls: &[(CarrierId, u64)],
        at: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        let calls: Vec<&(CarrierId, u64)> = calls.iter().filter(|(_, n)| *n > 0).collect();
        if calls.is_empty() {
            return Ok(());
        }
        let key = self.key(hour_of(at));
        let pipe = self.pool.next().pipeline();
        for (carrier, n) in calls {
            let field = format!("{:02}:{carrier}", at.minute());
            let by = i64::try_from(*n).unwrap_or(i64::MAX);
            let _: () = pipe.hincrby(key.as_str(), field, by).await?;
        }
        let _: () = pipe.expire(key.as_str(), MINUTES_TTL_SECS, None).await?;
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }

    /// Calls per carrier over the `minutes` whole minutes before `end` (the minute `end` falls
    /// in excluded: it is still being counted). One `HGETALL` per UTC hour the window touches.
    pub async fn per_carrier(
        &self,
        end: DateTime<Utc>,
        minutes: u32,
    ) -> Result<HashMap<CarrierId, u64>, QueueError> {
        let end = end
            .with_second(0)
            .and_then(|t| t.with_nanosecond(0))
            .unwrap_or(end);
        let start = end - ChronoDuration::minutes(i64::from(minutes));
        // hour -> the minutes of the window in it.
        let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
        let mut t = start;
        while t < end {
            let h = hour_of(t);
            let mm = format!("{:02}", t.minute());
            match wanted.last_mut() {
                Some((last, mins)) if *last == h => mins.push(mm),
                _ => wanted.push((h, vec![mm])),
            }
            t += ChronoDuration::minutes(1);
        }
        let mut out: HashMap<CarrierId, u64> = HashMap::new();
        for (hour, mins) in wanted {
            let fields: HashMap<String, String> = self.pool.hgetall(self.key(hour)).await?;
            for (field, raw) in fields {
                let Some((mm, carrier)) = field.split_once(':') else {
                    continue;
                };
                if !mins.iter().any(|m| m == mm) {
                    continue;
                }
                let (Ok(carrier), Ok(n)) = (carrier.parse::<i64>(), raw.parse::<u64>()) else {
                    continue;
                };
                *out.entry(CarrierId(carrier)).or_default() += n;
            }
        }
        Ok(out)
    }
}

/// The last [`BudgetReport`], one JSON string.
#[derive(Debug, Clone)]
pub struct CarrierBudgetBoard {
    pool: Pool,
    key: String,
}

impl CarrierBudgetBoard {
    pub fn new(pool: Pool, keys: Keys) -> Self {
        Self {
            pool,
            key: keys.render(&RedisKey::CarrierBudget),
        }
    }

    /// Replaces the figures; they expire [`BUDGET_TTL_SECS`] later unless written again.
    pub async fn publish(&self, report: &BudgetReport) -> Result<(), QueueError> {
        let json = serde_json::to_string(report)?;
        let _: () = self
            .pool
            .set(
                self.key.as_str(),
                json,
                Some(Expiration::EX(BUDGET_TTL_SECS)),
                None,
                false,
            )
            .await?;
        Ok(())
    }

    /// The last figures; `None` when none were written lately (or they do not decode: written
    /// by another version).
    pub async fn read(&self) -> Result<Option<BudgetReport>, QueueError> {
        let json: Option<String> = self.pool.get(self.key.as_str()).await?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }
}
