//! One task type's dispatch loop: manual list first, then the decisive lane, then every shard
//! in parallel, no more than the pool, the cluster-wide slots and the carrier budget let start;
//! and the hand-off of one card to the pool.

use crate::dispatch::Ctx;
use crate::gate::{BUDGET_PAUSE, SLOT_PAUSE, budget_room, cluster_room};
use crate::pools::Pool;
use crate::shards::{AskPlan, MIN_PER_SHARD, dequeue_shards, shares, take_decisive, take_manual};
use domain::{CardId, TaskType};
use futures::FutureExt;
use polling_queue::WAKE_HORIZON;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use task_handlers::{Outcome, TaskHandler};
use tokio::time::Instant;
use tracing::Instrument;

/// One task type: manual list first, then every shard in parallel, as much as the pool holds.
///
/// Waiting costs nothing: a shard is asked again when the entry its last dequeue named as its
/// earliest comes due (`AskPlan`), the manual list when it holds cards, and both at the latest
/// after [`WAKE_HORIZON`]; writers that make entries due sooner wake the loop
/// (`polling:queue:wake`), and the node's probe (`upkeep::probe_loop`) wakes it within a tick
/// for a manual list that holds cards (however they were pushed) or a wake whose message was
/// lost. Without the wake subscription the loop asks every tick, as a loop that cannot be told
/// must.
pub(crate) async fn type_loop(ctx: Arc<Ctx>, pool: Arc<Pool>, handler: Arc<dyn TaskHandler>) {
    let task = pool.task;
    let tick = ctx.settings.tick;
    let horizon = if ctx.wakes.is_some() {
        WAKE_HORIZON
    } else {
        tick
    };
    let mut plan = AskPlan::new(
        ctx.queue.settings().shard_count,
        tick,
        horizon,
        Instant::now(),
    );
    let mut manual_at = Instant::now();
    let mut decisive_at = Instant::now();
    let mut rotate = 0u32;
    // Wait for this much room before dequeuing again while polls are running, so that one
    // round trip per shard moves a useful number of cards (a round of a few cards over every
    // shard costs as many round trips as a full one).
    let chunk = (pool.size / 4).clamp(1, MIN_PER_SHARD);
    while !ctx.shutdown.is_cancelled() {
        let free = pool.free();
        // Cards on the manual list go as soon as one poll's room is free, not a chunk's.
        let manual_waiting = manual_at <= Instant::now()
            || ctx.wakes.as_ref().is_some_and(|w| w.manual_pending(task));
        if free == 0 || (free < chunk && pool.in_use() > 0 && !manual_waiting) {
            // Backpressure: dequeue nothing until polls finish (or a manual trigger arrives).
            let want = u32::try_from(if manual_waiting { 1 } else { chunk }).unwrap_or(1);
            tokio::select! {
                _ = ctx.shutdown.cancelled() => break,
                p = pool.permits.clone().acquire_many_owned(want) => drop(p),
                _ = woken(&ctx, task), if free > 0 => {}
                _ = tokio::time::sleep(tick) => {}
            }
            continue;
        }
        let now = Instant::now();
        if let Some(wakes) = &ctx.wakes {
            let woken = wakes.take(task);
            if woken.all || woken.manual {
                manual_at = now;
            }
            if woken.all {
                decisive_at = now;
            }
            plan.wake((!woken.all).then_some(&woken.shards), now);
        }
        let ready = plan.ready(now, rotate);
        let ask_manual = manual_at <= now;
        if ready.is_empty() && !ask_manual {
            // Nothing due that this loop knows of: sleep until the next shard comes due or a
            // writer announces one.
            let until = plan.earliest().min(manual_at);
            tokio::select! {
                _ = ctx.shutdown.cancelled() => break,
                _ = tokio::time::sleep_until(until) => {}
                _ = woken(&ctx, task) => {}
            }
            continue;
        }
        let wanted = free;
        let free = match &ctx.semaphore {
            Some(semaphore) => {
                let own = (&pool.finished, pool.in_use() > 0);
                cluster_room(semaphore, task, free, own, &ctx.shutdown).await
            }
            None => free,
        };
        // The cluster-wide slots bound this round: the cards taken now hold them as soon as
        // their handlers start, so the next question waits for a poll to finish.
        let slot_bound = free < wanted;
        // Under the carrier budget: no more than it lets start; and after such a round a pause,
        // so that the handlers' reservations show in the budget before it is asked again.
        let (free, paced) = match &ctx.budget {
            Some(budget) if free > 0 => {
                let room = budget_room(budget, task, free, &ctx.shutdown).await;
                (room, room < free)
            }
            _ => (free, false),
        };
        if free == 0 {
            continue;
        }
        let mut cards = Vec::new();
        if ask_manual {
            cards = take_manual(&ctx.queue, task, free).await;
            metrics::counter!("cmp_dequeued_total", "task" => task.as_str(), "source" => "manual")
                .increment(cards.len() as u64);
            // A list that gave all that was asked may hold more.
            manual_at = if cards.len() >= free {
                now
            } else {
                now + horizon
            };
        }
        // Then the cards whose poll may stop or resume them, before the rest of the due ones:
        // under a carrier quota below demand they would otherwise wait their turn in the
        // backlog. Their shard entries are due, so a shard is ready whenever one of them is.
        let room = free.saturating_sub(cards.len());
        if room > 0 && !ready.is_empty() && decisive_at <= now {
            let before = cards.len();
            let (taken, again) = take_decisive(&ctx.queue, task, room, now, tick).await;
            decisive_at = again;
            cards.extend(taken);
            metrics::counter!("cmp_dequeued_total", "task" => task.as_str(), "source" => "decisive")
                .increment((cards.len() - before) as u64);
        }
        let room = free.saturating_sub(cards.len());
        if room > 0 && !ready.is_empty() {
            let shares = shares(room, &ready);
            rotate = rotate.wrapping_add(shares.len() as u32);
            let answers = dequeue_shards(&ctx.queue, task, shares, ctx.settings.batch).await;
            let now = Instant::now();
            let before = cards.len();
            for answer in answers {
                plan.answered(&answer, now);
                if let Some(d) = answer.dequeued {
                    cards.extend(d.cards);
                }
            }
            metrics::counter!("cmp_dequeued_total", "task" => task.as_str(), "source" => "shard")
                .increment((cards.len() - before) as u64);
        }
        if cards.is_empty() {
            continue;
        }
        if let Some(budget) = &ctx.budget {
            budget.dispatched(task, cards.len());
        }
        for card in cards {
            dispatch(&ctx, &pool, &handler, card).await;
        }
        if paced {
            tokio::select! {
                _ = ctx.shutdown.cancelled() => break,
                _ = tokio::time::sleep(BUDGET_PAUSE) => {}
            }
        } else if slot_bound {
            tokio::select! {
                _ = ctx.shutdown.cancelled() => break,
                _ = pool.finished.notified() => {}
                _ = tokio::time::sleep(SLOT_PAUSE) => {}
            }
        }
    }
}

/// Until a writer wakes the loop of `task` (never without the wake subscription).
async fn woken(ctx: &Ctx, task: TaskType) {
    match &ctx.wakes {
        Some(wakes) => wakes.notified(task).await,
        None => std::future::pending().await,
    }
}

/// Hands one card to the pool (waiting for room if a manual card overshot it).
async fn dispatch(ctx: &Arc<Ctx>, pool: &Arc<Pool>, handler: &Arc<dyn TaskHandler>, card: CardId) {
    let permit = match pool.permits.clone().try_acquire_owned() {
        Ok(p) => p,
        Err(_) => match pool.permits.clone().acquire_owned().await {
            Ok(p) => p,
            Err(_) => return, // the semaphore is never closed
        },
    };
    if !pool.start(card) {
        // Being polled here right now, yet dequeued (or claimed by a manual trigger) again:
        // its handler has already put it back (due now when the cluster pool or the carrier
        // budget had no room) and this round leased it anew. Dropping it would leave it leased
        // until the lease ends; hand it back due now instead, for the next round.
        let task = pool.task;
        if let Err(e) = ctx.queue.reschedule(card, task, ctx.clock.now()).await {
            tracing::warn!(card_id = %card, task = %task, error = %e, "cannot hand back a card polled twice at once; its lease brings it back");
        }
        return;
    }
    let (ctx, pool, handler) = (ctx.clone(), pool.clone(), handler.clone());
    let task = pool.task;
    ctx.tracker.clone().spawn(async move {
        let _permit = permit;
        let span = tracing::info_span!("poll", card_id = %card, task = %task,
            trace_id = tracing::field::Empty, outcome = tracing::field::Empty);
        if let Some(trace_id) = crate::trace::sampled_trace_id(&span) {
            span.record("trace_id", trace_id.as_str());
        }
        let started = std::time::Instant::now();
        let outcome = match AssertUnwindSafe(handler.handle(card).instrument(span.clone())).catch_unwind().await {
            Ok(o) => o,
            Err(_) => {
                tracing::error!(card_id = %card, task = %task, "handler panicked; card rescheduled at the retry interval");
                let at = ctx.clock.now() + chrono::Duration::from_std(ctx.settings.retry_interval).unwrap_or_default();
                if let Err(e) = ctx.queue.reschedule(card, task, at).await {
                    tracing::error!(card_id = %card, task = %task, error = %e, "reschedule after panic failed; the lease brings the card back");
                }
                Outcome::Failure
            }
        };
        span.record("outcome", outcome.as_str());
        pool.metrics.handled(outcome).increment(1);
        pool.metrics.duration.record(started.elapsed().as_secs_f64());
        pool.finish(card);
    });
}
