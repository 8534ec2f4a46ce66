//! Several worker nodes, a node killed mid-work, and a graceful stop.

mod common;

use chrono::Utc;
use common::*;
use domain::TaskType;
use gateway_sim::FaultsPatch;
use std::time::Duration;

#[tokio::test]
async fn two_workers_never_poll_a_card_twice_within_its_interval() -> anyhow::Result<()> {
    // Interval 10 s over 20 s: each card is polled two or three times in all, whichever node
    // takes it; a card handed to both nodes at once would show more.
    let w = world(300, 10, 1).await?;
    let mut a = spawn_worker(&w, &[])?;
    let mut b = spawn_worker(&w, &[])?;
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(terminate(&mut a).await?.success());
    assert!(terminate(&mut b).await?.success());
    let counts: Vec<u32> = (0..w.cards.len())
        .map(|i| w.sim.state().card(&iccid(i)).map_or(0, |c| c.usage_queries))
        .collect();
    assert!(counts.iter().all(|n| *n >= 1), "every card polled");
    let max = counts.iter().max().copied().unwrap_or(0);
    assert!(
        max <= 3,
        "a card was polled {max} times in 20 s at a 10 s interval"
    );
    Ok(())
}

#[tokio::test]
async fn a_killed_worker_loses_no_card() -> anyhow::Result<()> {
    let w = world(2_000, 60, 1).await?;
    w.all_due_now().await?;
    // A slow carrier keeps thousands of cards leased (in flight) when the node dies.
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(3_000),
            ..Default::default()
        })
        .map_err(anyhow::Error::msg)?;
    let lease = [
        ("CMP_LEASE_SECS", "4"),
        ("CMP_WORKER_POOL_CARDDATA", "2000"),
        ("CMP_GATEWAY_TIMEOUT_MS", "10000"),
    ];
    let mut first = spawn_worker(&w, &lease)?;
    let leased = eventually(Duration::from_secs(60), || async {
        let due_later = w
            .queue
            .get_total_queue_depth(TaskType::Carddata)
            .await?
            .saturating_sub(w.queue.get_due_backlog(TaskType::Carddata).await?);
        Ok(due_later >= 1_000)
    })
    .await?;
    assert!(leased, "cards leased before the kill");
    first.start_kill()?;
    first.wait().await?;

    // Nothing left the queues.
    assert!(
        all_queued(&w).await?,
        "every card still queued after SIGKILL"
    );

    // A new node polls every card again once the leases end.
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(0),
            ..Default::default()
        })
        .map_err(anyhow::Error::msg)?;
    let before: Vec<u32> = (0..w.cards.len())
        .map(|i| w.sim.state().card(&iccid(i)).map_or(0, |c| c.usage_queries))
        .collect();
    let mut second = spawn_worker(&w, &lease)?;
    // The leases (4 s) end and every card comes due again by itself: nobody rescheduled it.
    let all_again = eventually(Duration::from_secs(180), || async {
        Ok((0..w.cards.len())
            .all(|i| w.sim.state().card(&iccid(i)).map_or(0, |c| c.usage_queries) > before[i]))
    })
    .await?;
    assert!(all_again, "every card polled again after the lease");
    assert!(all_queued(&w).await?);
    assert!(terminate(&mut second).await?.success());
    Ok(())
}

#[tokio::test]
async fn sigterm_exits_cleanly_and_leaves_no_card_leased() -> anyhow::Result<()> {
    let w = world(500, 30, 1).await?;
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(1_500),
            ..Default::default()
        })
        .map_err(anyhow::Error::msg)?;
    let mut worker = spawn_worker(&w, &[("CMP_WORKER_POOL_CARDDATA", "200")])?;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let started = std::time::Instant::now();
    let status = terminate(&mut worker).await?;
    assert!(status.success(), "exit status {status}");
    assert!(started.elapsed() < Duration::from_secs(35));
    // No entry sits at a lease deadline (now + 300 s) beyond its next due time (now + 30 s).
    let limit = Utc::now().timestamp() as f64 + 31.0;
    for c in &w.cards {
        for t in TaskType::ALL {
            if let Some(score) = w.queue.score_of(*c, t).await? {
                assert!(score <= limit, "card {c} {t} left leased until {score}");
            }
        }
    }
    Ok(())
}
