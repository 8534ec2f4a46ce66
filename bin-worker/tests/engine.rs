//! The engine end to end: a real `cmp-worker` process, real PostgreSQL and Redis, gateway-sim.

mod common;

use chrono::Utc;
use common::*;
use domain::{NetworkStatus, PackageOwner, StopReason, TaskType};
use gateway_sim::SimCardPatch;
use rust_decimal::Decimal;
use std::time::Duration;

#[tokio::test]
async fn cards_are_polled_stopped_when_exhausted_and_resumed_after_renewal() -> anyhow::Result<()> {
    let w = world(2_000, 600, 1).await?;
    w.all_due_now().await?;
    let mut worker = spawn_worker(&w, &[("CMP_DATABASE_MAX_CONNECTIONS", "16")])?;

    // Every card polled for each scheduled type (the protect poll of a standalone card asks
    // the carrier nothing, so it is counted on the queue: nothing left due).
    let all = eventually(Duration::from_secs(240), || async {
        Ok(polled_at_least(&w, 1) == 2_000
            && w.sim_calls("realname") >= 2_000
            && w.sim_calls("packages") >= 2_000
            && w.queue.get_due_backlog(TaskType::Protect).await? == 0)
    })
    .await?;
    assert!(
        all,
        "all cards polled: usage {} realname {} packages {}",
        polled_at_least(&w, 1),
        w.sim_calls("realname"),
        w.sim_calls("packages")
    );
    assert!(all_queued(&w).await?, "every card in every queue");

    // Card 0 passes its limit: 1 GB package, the carrier reports 1,100 MB.
    let card = w.cards[0];
    w.sim
        .state()
        .patch_card(
            &iccid(0),
            SimCardPatch {
                month_total_mb: Some(Decimal::from(1_100)),
                growth_mb_per_query: Some(Decimal::ZERO),
                ..Default::default()
            },
        )
        .map_err(anyhow::Error::msg)?;
    w.queue.enqueue_manual(card, TaskType::Carddata).await?;
    let stopped = eventually(Duration::from_secs(60), || async {
        Ok(w.stores
            .cards
            .get(card)
            .await?
            .is_some_and(|c| c.facts.network_status == NetworkStatus::Stopped))
    })
    .await?;
    assert!(stopped, "exhausted card stopped");
    let c = w.stores.cards.get(card).await?.expect("card");
    assert_eq!(c.stop_reason, Some(StopReason::TrafficExhausted));
    // Polled again, still exhausted: the carrier was asked to stop it exactly once.
    let before = w
        .sim
        .state()
        .card(&iccid(0))
        .expect("sim card")
        .usage_queries;
    w.queue.enqueue_manual(card, TaskType::Carddata).await?;
    assert!(
        eventually(Duration::from_secs(60), || async {
            Ok(w.sim
                .state()
                .card(&iccid(0))
                .expect("sim card")
                .usage_queries
                > before)
        })
        .await?
    );
    // The poll ends by rescheduling the card (its lease score replaced): any stop it asked
    // for was asked before that.
    assert!(
        eventually(Duration::from_secs(30), || async {
            Ok(w.queue
                .score_of(card, TaskType::Carddata)
                .await?
                .is_some_and(|score| !polling_queue::is_lease_score(score)))
        })
        .await?,
        "the second poll ended"
    );
    assert_eq!(
        w.sim
            .state()
            .card(&iccid(0))
            .expect("sim card")
            .stops_applied,
        1
    );

    // A new package resumes it at the next package poll.
    w.stores
        .packages
        .create_usage(&package(
            PackageOwner::Card(card),
            Decimal::from(10_240),
            Utc::now(),
        ))
        .await?;
    w.queue.enqueue_manual(card, TaskType::Package).await?;
    let resumed = eventually(Duration::from_secs(60), || async {
        Ok(w.stores
            .cards
            .get(card)
            .await?
            .is_some_and(|c| c.facts.network_status == NetworkStatus::Online))
    })
    .await?;
    assert!(resumed, "renewed card resumed");
    assert_eq!(
        w.sim
            .state()
            .card(&iccid(0))
            .expect("sim card")
            .starts_applied,
        1
    );

    let status = terminate(&mut worker).await?;
    assert!(status.success(), "clean exit: {status}");
    Ok(())
}

#[tokio::test]
async fn a_manual_trigger_is_handled_within_two_ticks() -> anyhow::Result<()> {
    // One-hour interval: without the trigger the card would not be polled again for an hour.
    let w = world(50, 3_600, 1).await?;
    let mut worker = spawn_worker(&w, &[("CMP_SCHEDULER_TICK_MS", "500")])?;
    // The initializer spreads the first round over the hour; wait until it ran.
    assert!(eventually(Duration::from_secs(60), || async { all_queued(&w).await }).await?);
    let card = w.cards[7];
    let before = w
        .sim
        .state()
        .card(&iccid(7))
        .expect("sim card")
        .usage_queries;
    w.queue.enqueue_manual(card, TaskType::Carddata).await?;
    let started = std::time::Instant::now();
    let handled = eventually(Duration::from_secs(5), || async {
        Ok(w.sim
            .state()
            .card(&iccid(7))
            .expect("sim card")
            .usage_queries
            > before)
    })
    .await?;
    assert!(handled);
    assert!(
        started.elapsed() <= Duration::from_millis(1_500),
        "took {:?}",
        started.elapsed()
    );
    assert!(terminate(&mut worker).await?.success());
    Ok(())
}
