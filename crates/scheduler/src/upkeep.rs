//! What a run does beside the type loops: the gauges and the wake probe while it runs, and the
//! drain of the running polls at shutdown.

use crate::ShutdownReport;
use crate::dispatch::Ctx;
use crate::pools::Pool;
use domain::CardId;
use polling_queue::WakeProbe;
use std::sync::Arc;
use std::time::Duration;

/// `cmp_oldest_due_age_seconds{task}`: how long ago the oldest due card of the task type came
/// due (0 when none is), read with `cmp_due_backlog`; over the type's interval, cards are late.
pub const OLDEST_DUE_AGE: &str = "cmp_oldest_due_age_seconds";

/// `cmp_decisive_waiting{task}`: picks in the task type's decisive lane, the cards whose next
/// poll may stop or resume them (due or not yet).
pub const DECISIVE_WAITING: &str = "cmp_decisive_waiting";

/// The gauges, until shutdown (periodic jobs run in their own tasks).
pub(crate) async fn main_loop(ctx: &Ctx, pools: &[Arc<Pool>]) {
    let mut next_backlog = tokio::time::Instant::now();
    let tick = ctx.settings.tick.min(Duration::from_secs(1));
    loop {
        let now = tokio::time::Instant::now();
        for pool in pools {
            metrics::gauge!("cmp_pool_in_use", "task" => pool.task.as_str())
                .set(pool.in_use() as f64);
        }
        if now >= next_backlog {
            next_backlog = now + ctx.settings.backlog_every;
            for pool in pools {
                match ctx.queue.get_due_backlog(pool.task).await {
                    Ok(n) => {
                        metrics::gauge!("cmp_due_backlog", "task" => pool.task.as_str())
                            .set(n as f64);
                        // Read only when something is due: nothing due is no age.
                        let oldest = if n == 0 {
                            0
                        } else {
                            ctx.queue.queue_summary(pool.task).await.oldest_due_age_secs
                        };
                        metrics::gauge!(OLDEST_DUE_AGE, "task" => pool.task.as_str())
                            .set(oldest as f64);
                    }
                    Err(e) => {
                        tracing::warn!(task = %pool.task, error = %e, "due backlog unavailable")
                    }
                }
                if let Ok(n) = ctx.queue.decisive_len(pool.task).await {
                    metrics::gauge!(DECISIVE_WAITING, "task" => pool.task.as_str()).set(n as f64);
                }
            }
        }
        tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            _ = tokio::time::sleep(tick) => {}
        }
    }
}

/// Once a tick until shutdown, the look of `probe` (manual lists, wake ledger): a card pushed on
/// a manual list by any system, or a wake whose message was lost, reaches its loop within a
/// tick. Only with the wake subscription: without it the loops ask every tick themselves.
pub(crate) async fn probe_loop(ctx: Arc<Ctx>, mut probe: WakeProbe) {
    let Some(wakes) = ctx.wakes.clone() else {
        return;
    };
    let mut every = tokio::time::interval(ctx.settings.tick);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        match ctx.queue.probe_wakes(&mut probe, &wakes).await {
            Ok(()) => failing = false,
            Err(error) if !failing => {
                failing = true;
                tracing::warn!(%error, "cannot look at the manual lists and the wake ledger; the loops still ask within the horizon");
            }
            Err(_) => {}
        }
    }
}

/// After the loops stopped: wait for running polls, then hand back what is left.
pub(crate) async fn drain(ctx: &Ctx, pools: &[Arc<Pool>]) -> ShutdownReport {
    ctx.tracker.close();
    let drained = tokio::time::timeout(ctx.settings.shutdown_grace, ctx.tracker.wait())
        .await
        .is_ok();
    let mut rescheduled = 0;
    if !drained {
        let now = ctx.clock.now();
        for pool in pools {
            let left: Vec<(CardId, chrono::DateTime<chrono::Utc>)> =
                pool.in_flight().into_iter().map(|c| (c, now)).collect();
            if left.is_empty() {
                continue;
            }
            match ctx.queue.reschedule_many(pool.task, &left).await {
                Ok(_) => rescheduled += left.len(),
                Err(e) => {
                    tracing::error!(task = %pool.task, cards = left.len(), error = %e, "could not hand cards back; their lease brings them back")
                }
            }
        }
    }
    tracing::info!(drained, rescheduled, "scheduler stopped");
    ShutdownReport {
        drained,
        rescheduled,
    }
}
