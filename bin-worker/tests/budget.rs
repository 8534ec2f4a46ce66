//! A carrier quota below demand does not starve cards: the worker dequeues no more
//! than the shared budget lets start, so cards wait in their queues, oldest due first; stops
//! pass the queries; no call is refused by the limiter; the carrier's quota holds.

mod common;

use common::*;
use domain::NetworkStatus;
use domain::store::Page;
use gateway_sim::{FaultsPatch, SimCardPatch};
use rust_decimal::Decimal;
use std::time::{Duration, Instant};

/// The fleet: 120 cards, every type every 6 s; three types ask the carrier (the protect poll of
/// a standalone card asks nothing), so 60 calls a second are wanted against a quota of 20.
const CARDS: usize = 120;
const INTERVAL_SECS: u32 = 6;
const QUOTA: u32 = 20;
/// `CMP_GATEWAY_RATE_LIMIT`: 95% of the carrier's quota. The carrier counts per wall-clock
/// second and calls arrive with jitter, so a limit exactly at the quota sees a few 429s a
/// minute (measured: 4-8 in 30 s at 20/s); each costs the card a retry interval and one more
/// trip through the backlog.
const LIMIT: u32 = 19;
const EXHAUSTED: usize = 24;

/// The bound of docs/decisions.md ("A carrier quota below demand"): a card is polled within
/// interval × (calls wanted per second / rate) × (largest shard / mean shard) of falling due,
/// plus the time of the stop/start calls that pass the queries. Here every card is due at once
/// when the worker makes its first call: 6 s × (60/s / 19/s) × (8 / 7.5) = 20.2 s, + 24 stops
/// at 19/s = 1.3 s: 21.5 s; and 2 s for the worker's warm-up (its first seconds run below the
/// rate: measured 16, 16, 18 calls). Random carrier faults are left out: each failed poll adds
/// a retry interval and one more trip through the backlog, so with them the bound is a
/// probability (the chaos suite's scenario 4).
///
/// Checked when the node reached 90% of the limit; otherwise the machine paced it, not the
/// budget, and the test checks the turn-taking alone: no card is polled a third time before
/// every card had its first poll (oldest due first, shards in rotation).
fn bound(rate: f64) -> Duration {
    let wanted = (CARDS as f64) * 3.0 / f64::from(INTERVAL_SECS);
    let secs =
        f64::from(INTERVAL_SECS) * (wanted / rate) * (8.0 / 7.5) + EXHAUSTED as f64 / rate + 2.0;
    Duration::from_secs_f64(secs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_below_demand_polls_every_card_within_the_bound_and_stops_each_exhausted_card_once()
-> anyhow::Result<()> {
    let w = world(CARDS, INTERVAL_SECS, 0).await?;
    // The first EXHAUSTED cards are past their 1 GB package as soon as they are polled.
    for i in 0..EXHAUSTED {
        let patch = SimCardPatch {
            month_total_mb: Some(Decimal::from(2_000)),
            ..Default::default()
        };
        w.sim
            .state()
            .patch_card(&iccid(i), patch)
            .map_err(anyhow::Error::msg)?;
    }
    w.sim
        .state()
        .set_faults(FaultsPatch {
            quota_per_sec: Some(u64::from(QUOTA)),
            retry_after_secs: Some(1),
            ..Default::default()
        })
        .map_err(anyhow::Error::msg)?;
    w.all_due_now().await?;
    let bind = free_port()?;
    let mut worker = spawn_worker(
        &w,
        &[
            ("CMP_WORKER_BIND", bind.as_str()),
            ("CMP_GATEWAY_RATE_LIMIT", &LIMIT.to_string()),
        ],
    )?;
    // The clock starts at the first call (a loaded machine takes seconds to start a worker).
    let calling = eventually(Duration::from_secs(60), || async {
        Ok(w.sim.state().stats().requests > 0)
    })
    .await?;
    assert!(calling, "the worker calls the carrier");
    let started = Instant::now();

    // Every exhausted card stopped, every card polled (usage), within the bound.
    let stopped_at = std::sync::Mutex::new(vec![None; EXHAUSTED]);
    // Long enough for a loaded machine: the bound below is computed from the rate reached.
    let all = eventually(Duration::from_secs(240), || async {
        let mut stopped_at = stopped_at.lock().unwrap_or_else(|p| p.into_inner());
        for (i, at) in stopped_at.iter_mut().enumerate() {
            let stopped = w.sim.state().card(&iccid(i)).map(|c| c.network_status);
            if at.is_none() && stopped == Some(NetworkStatus::Stopped) {
                *at = Some(started.elapsed());
            }
        }
        Ok(stopped_at.iter().all(Option::is_some) && polled_at_least(&w, 1) == CARDS)
    })
    .await?;
    let polled_in = started.elapsed();
    let most_polled = (0..CARDS)
        .filter_map(|i| w.sim.state().card(&iccid(i)).map(|c| c.usage_queries))
        .max()
        .unwrap_or(0);
    let stopped_at = stopped_at.into_inner().unwrap_or_else(|p| p.into_inner());
    let slowest = stopped_at.iter().flatten().max().copied();
    println!(
        "every card polled after {polled_in:?}; exhausted cards stopped after at most {slowest:?}"
    );
    let early = w.sim.state().stats();
    let text = http_get(&bind, "/metrics").await.unwrap_or_default();
    println!(
        "by call {:?}, by outcome {:?}, per second {:?}, budget waits {}",
        early.by_call,
        early.by_outcome,
        early
            .per_second
            .iter()
            .map(|s| s.requests)
            .collect::<Vec<_>>(),
        metric_sum(&text, "cmp_gateway_budget_waits_total", "")
    );
    for (i, card) in w.cards.iter().enumerate() {
        let sim = w.sim.state().card(&iccid(i));
        if sim.as_ref().is_some_and(|c| c.usage_queries == 0) {
            let score = w.queue.score_of(*card, domain::TaskType::Carddata).await?;
            println!(
                "card {card} never polled: carddata score {score:?}, now {}",
                chrono::Utc::now().timestamp_millis() as f64 / 1e3
            );
        }
    }
    assert!(
        all,
        "stopped: {stopped_at:?}, polled {}",
        polled_at_least(&w, 1)
    );
    // The time bound is the budget's: it is checked when the node could use the budget. A
    // machine too loaded to make the limit's calls a second (seen: 10-12/s with four builds
    // beside the test) paces the worker instead, and then what is checked is the turn-taking
    // below, which holds whatever the pace.
    let reached = early.requests as f64 / polled_in.as_secs_f64();
    println!(
        "calls per second reached {reached:.1} (limit {LIMIT}); the busiest card had {most_polled} usage polls"
    );
    if reached >= 0.9 * f64::from(LIMIT) {
        assert!(
            polled_in <= bound(f64::from(LIMIT)),
            "every card polled within {:?}: {polled_in:?}",
            bound(f64::from(LIMIT))
        );
    } else {
        println!(
            "the node reached {reached:.1} calls/s, under 90% of the limit: the time bound ({:?}) is not checked",
            bound(f64::from(LIMIT))
        );
    }
    assert!(
        most_polled <= 2,
        "oldest due first: no card polled a third time before every card's first poll ({most_polled})"
    );

    // Let a few more rounds go by, then: each exhausted card stopped exactly once, by the
    // carrier's count and by the state log.
    tokio::time::sleep(Duration::from_secs(u64::from(INTERVAL_SECS))).await;
    let metrics = http_get(&bind, "/metrics").await.unwrap_or_default();
    assert!(terminate(&mut worker).await?.success());
    for (i, card) in w.cards.iter().enumerate().take(EXHAUSTED) {
        let sim = w.sim.state().card(&iccid(i));
        assert_eq!(sim.map(|c| c.stops_applied), Some(1), "card {card}");
        let log = w.stores.cards.state_log(*card, Page::new(1, 50)).await?;
        assert_eq!(log.total, 1, "card {card}: {:?}", log.items);
    }

    // No call refused by the limiter, and the carrier's quota held.
    let refused = metric_sum(
        &metrics,
        "cmp_gateway_requests_total",
        "outcome=\"rate_limited\"",
    );
    assert_eq!(refused, 0.0, "calls refused by the budget");
    let stats = w.sim.state().stats();
    let seconds: Vec<u64> = stats.per_second.iter().map(|s| s.requests).collect();
    let busiest = seconds.iter().copied().max().unwrap_or(0);
    let over_quota = stats.by_outcome.get("over_quota").copied().unwrap_or(0);
    println!(
        "requests {} (over quota {over_quota}); per second {seconds:?}",
        stats.requests
    );
    assert!(
        busiest as f64 <= f64::from(QUOTA) * 1.1,
        "per-second counts within the quota + 10%: {seconds:?}"
    );
    Ok(())
}
