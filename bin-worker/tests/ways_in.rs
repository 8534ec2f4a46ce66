//! A card pushed on the manual list reaches the carrier within two ticks, end to end: a real
//! `cmp-worker` process, real PostgreSQL and Redis, gateway-sim. Pushed by the API's way
//! (`enqueue_manual`: the `RPUSH` and its announcement) and by any other system's (a bare
//! `RPUSH`, nothing announced), while the worker idles and while it is busy with a backlog;
//! timed from the push to the carrier's answer to the card's usage query.

mod common;

use chrono::Utc;
use common::*;
use domain::{CardId, TaskType};
use fred::prelude::*;
use gateway_sim::FaultsPatch;
use polling_queue::RedisKey;
use std::time::{Duration, Instant};

/// The worker's tick in this test; two of them bound every push.
const TICK_MS: u64 = 500;
/// Tries of each way, in each phase.
const RUNS: usize = 20;
const CARDS: usize = 2_000;
/// Cards `0..BACKLOG` make the backlog of the busy phase; the cards pushed come after them.
const BACKLOG: usize = 1_800;

#[derive(Clone, Copy, Debug)]
enum Way {
    Api,
    Raw,
}

async fn push(w: &World, raw: &fred::clients::Pool, way: Way, card: CardId) -> anyhow::Result<()> {
    match way {
        Way::Api => w.queue.enqueue_manual(card, TaskType::Carddata).await?,
        Way::Raw => {
            let key = w.queue.keys().render(&RedisKey::Manual {
                task: TaskType::Carddata,
            });
            let _: i64 = raw.rpush(key, card.get()).await?;
        }
    }
    Ok(())
}

fn usage_queries(w: &World, i: usize) -> u32 {
    w.sim.state().card(&iccid(i)).map_or(0, |c| c.usage_queries)
}

/// Pushes card `i` by `way` and waits for the carrier's answer to its usage query: how long.
async fn time_to_carrier(
    w: &World,
    raw: &fred::clients::Pool,
    way: Way,
    i: usize,
) -> anyhow::Result<Duration> {
    let before = usage_queries(w, i);
    let pushed = Instant::now();
    push(w, raw, way, w.cards[i]).await?;
    while usage_queries(w, i) == before {
        anyhow::ensure!(
            pushed.elapsed() < Duration::from_secs(60),
            "{way:?}: card {i} not polled within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(pushed.elapsed())
}

/// [`RUNS`] pushes of each way, cards from `first` on, at moments spread over the tick; the
/// slowest of each way, asserted within two ticks.
async fn phase(
    w: &World,
    raw: &fred::clients::Pool,
    what: &str,
    first: usize,
) -> anyhow::Result<()> {
    let bound = Duration::from_millis(2 * TICK_MS);
    for (k, way) in [Way::Api, Way::Raw].into_iter().enumerate() {
        let mut slowest = Duration::ZERO;
        for run in 0..RUNS {
            tokio::time::sleep(Duration::from_millis(TICK_MS * (run as u64 % 10) / 10)).await;
            let took = time_to_carrier(w, raw, way, first + k * RUNS + run).await?;
            slowest = slowest.max(took);
        }
        println!(
            "{what}, {way:?}: slowest push to carrier of {RUNS}: {} ms",
            slowest.as_millis()
        );
        assert!(
            slowest <= bound,
            "{what}, {way:?}: the slowest of {RUNS} took {} ms (two ticks: {} ms)",
            slowest.as_millis(),
            bound.as_millis()
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_card_pushed_on_the_manual_list_reaches_the_carrier_within_two_ticks()
-> anyhow::Result<()> {
    // One-hour interval: without the push no card here would be polled again for an hour.
    let w = world(CARDS, 3_600, 1).await?;
    let tick = TICK_MS.to_string();
    let mut worker = spawn_worker(
        &w,
        &[
            ("CMP_SCHEDULER_TICK_MS", tick.as_str()),
            ("CMP_WORKER_POOL_CARDDATA", "4"),
        ],
    )?;
    assert!(eventually(Duration::from_secs(60), || async { all_queued(&w).await }).await?);
    let raw = w.env.redis.pool().await?;
    // Every card an hour out: the initializer spread the first round over the interval.
    let later = Utc::now() + chrono::Duration::hours(1);
    let entries: Vec<_> = w.cards.iter().map(|c| (*c, later)).collect();
    w.queue.requeue_many(TaskType::Carddata, &entries).await?;

    phase(&w, &raw, "idle worker", BACKLOG).await?;

    // Busy: 1,800 cards due now, 100 ms a carrier call, 4 carddata polls at a time (about
    // 45 s of backlog); the cards pushed jump it.
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(100),
            ..FaultsPatch::default()
        })
        .map_err(anyhow::Error::msg)?;
    let now = Utc::now();
    let backlog: Vec<_> = w.cards[..BACKLOG].iter().map(|c| (*c, now)).collect();
    w.queue.requeue_many(TaskType::Carddata, &backlog).await?;
    tokio::time::sleep(Duration::from_millis(TICK_MS)).await;
    anyhow::ensure!(
        w.queue.get_due_backlog(TaskType::Carddata).await? > 500,
        "the worker has a backlog"
    );
    phase(&w, &raw, "busy worker", BACKLOG + 2 * RUNS).await?;
    anyhow::ensure!(
        w.queue.get_due_backlog(TaskType::Carddata).await? > 0,
        "still busy at the end"
    );
    assert!(terminate(&mut worker).await?.success());
    Ok(())
}
