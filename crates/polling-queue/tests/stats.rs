//! The retention of the hour fields of `polling:stats:{type}`, against a real Redis.

mod common;

use chrono::Duration as Span;
use common::{TestRedis, t0};
use domain::{Clock, ManualClock, TaskType};
use fred::prelude::*;
use polling_queue::{Keys, RedisKey, TaskCounters, TaskOutcome};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn hour_fields_older_than_48_hours_are_pruned_when_a_new_hour_starts() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let pool = redis.pool().await?;
    let keys = Keys::new(redis.prefix.clone());
    let clock = ManualClock::new(t0());
    let counters = TaskCounters::new(pool.clone(), keys.clone(), Arc::new(clock.clone()));
    let task = TaskType::Realname;
    let ok = |counters: TaskCounters| async move {
        counters
            .record(task, TaskOutcome::Success, Duration::from_millis(5))
            .await
    };

    // A week of hourly traffic: without retention the hash gains a field every hour.
    for _ in 0..(7 * 24) {
        ok(counters.clone()).await?;
        counters
            .record(task, TaskOutcome::Failure, Duration::ZERO)
            .await?;
        clock.advance(Span::hours(1));
    }
    ok(counters.clone()).await?;
    let stats = counters.read(task).await?;
    assert_eq!(
        (stats.success, stats.failure),
        (7 * 24 + 1, 7 * 24),
        "totals are kept"
    );
    let hours: Vec<&String> = stats.hourly.keys().collect();
    assert_eq!(
        hours.len(),
        49,
        "48 h back plus the current hour: {hours:?}"
    );
    let oldest = (clock.now() - Span::hours(48))
        .format("%Y%m%d%H")
        .to_string();
    assert_eq!(hours.first().map(|h| h.as_str()), Some(oldest.as_str()));

    let key = keys.render(&RedisKey::Stats { task });
    let names: Vec<String> = pool.hkeys(key.as_str()).await?;
    // The duration histogram's `hist:{ms}` buckets are not hourly and are kept.
    let fields = names.iter().filter(|f| !f.starts_with("hist:")).count();
    // success, failure, duration_ms_sum + two outcomes for 48 hours + one for the current.
    assert_eq!(fields, 3 + 48 * 2 + 1);

    // Within an hour nothing more is read: a second prune finds nothing to delete.
    assert_eq!(counters.prune(task).await?, 0);
    Ok(())
}
