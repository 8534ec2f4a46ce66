//! Manual triggers across nodes: a card taken from a manual list is leased in its shard first,
//! so one card and type is never polled twice at once anywhere; and queue alignment.

mod common;

use chrono::Duration as Span;
use common::{TestRedis, age, server_now};
use domain::{CardId, ManualClock, TaskType};
use polling_queue::{Aligned, Keys, PollingQueueManager, QueueSettings, is_lease_score, to_score};
use std::sync::Arc;

struct Node {
    qm: PollingQueueManager,
    clock: ManualClock,
}

async fn two_nodes(redis: &TestRedis) -> anyhow::Result<(Node, Node)> {
    let keys = Keys::new(redis.prefix.clone());
    let mut nodes = Vec::new();
    let start = server_now(&redis.pool().await?).await?;
    for _ in 0..2 {
        let clock = ManualClock::new(start);
        let qm = PollingQueueManager::new(
            redis.pool().await?,
            keys.clone(),
            QueueSettings::default(),
            Arc::new(clock.clone()),
        );
        nodes.push(Node { qm, clock });
    }
    let b = nodes.pop().ok_or_else(|| anyhow::anyhow!("node"))?;
    let a = nodes.pop().ok_or_else(|| anyhow::anyhow!("node"))?;
    Ok((a, b))
}

const T: TaskType = TaskType::Carddata;

#[tokio::test]
async fn a_card_polled_by_one_node_is_not_claimed_by_another() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let (a, b) = two_nodes(&redis).await?;
    let now = domain::Clock::now(&a.clock);
    let card = CardId(7);
    a.qm.requeue(card, T, now).await?;
    // Node A dequeues (leases) it; node B takes it from the manual list meanwhile.
    assert_eq!(a.qm.dequeue_ready(card.shard(16), T, 10).await?, vec![card]);
    let leased = a.qm.score_of(card, T).await?.unwrap_or_default();
    assert!(
        is_lease_score(leased),
        "dequeue writes a lease score: {leased}"
    );

    assert_eq!(b.qm.claim(T, &[card]).await?, vec![], "in flight on node A");
    assert_eq!(
        a.qm.score_of(card, T).await?,
        Some(leased),
        "A's lease untouched"
    );

    // A reschedules at the interval: a waiting card, claimable again.
    a.qm.reschedule(card, T, now + Span::seconds(3600)).await?;
    let scheduled = a.qm.score_of(card, T).await?.unwrap_or_default();
    assert!(!is_lease_score(scheduled), "a scheduled time: {scheduled}");
    assert_eq!(b.qm.claim(T, &[card]).await?, vec![card]);
    let claimed = b.qm.score_of(card, T).await?.unwrap_or_default();
    assert!(is_lease_score(claimed) && claimed > to_score(now));
    // Now leased by B: neither A's dequeue nor a second trigger takes it.
    assert_eq!(a.qm.claim(T, &[card]).await?, vec![]);
    // Even with A's clock 10 minutes ahead, the lease is B's until the server's clock says so.
    a.clock.advance(Span::seconds(600));
    assert!(a.qm.dequeue_ready(card.shard(16), T, 10).await?.is_empty());
    assert_eq!(a.qm.claim(T, &[card]).await?, vec![]);
    Ok(())
}

#[tokio::test]
async fn an_expired_lease_and_an_unqueued_card_are_claimed() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let (a, b) = two_nodes(&redis).await?;
    let now = domain::Clock::now(&a.clock);
    let (leased, unqueued) = (CardId(16), CardId(33));
    a.qm.requeue(leased, T, now).await?;
    assert_eq!(a.qm.dequeue_ready(0, T, 10).await?, vec![leased]);
    // Node A died; its lease (300 s) ran out.
    age(&redis.pool().await?, &a.qm.keys().shard_queue(0, T), 301.0).await?;
    let mut claimed = b.qm.claim(T, &[leased, unqueued]).await?;
    claimed.sort();
    assert_eq!(claimed, vec![leased, unqueued]);
    assert_eq!(
        b.qm.score_of(unqueued, T).await?,
        None,
        "not added by the claim"
    );
    Ok(())
}

#[tokio::test]
async fn align_adds_missing_types_due_now_and_removes_the_others() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let (a, _) = two_nodes(&redis).await?;
    let now = domain::Clock::now(&a.clock);
    let card = CardId(42);
    let later = now + Span::seconds(600);
    a.qm.requeue(card, TaskType::Realname, later).await?;
    a.qm.requeue(card, TaskType::Protect, later).await?;
    // Wanted: realname (kept, score unchanged) and package (added, due now).
    let wanted = [true, false, true, false];
    let got = a.qm.align(&[(card, wanted)], now).await?;
    assert_eq!(
        got,
        Aligned {
            added: 1,
            removed: 1
        }
    );
    assert_eq!(
        a.qm.score_of(card, TaskType::Realname).await?,
        Some(to_score(later))
    );
    assert_eq!(
        a.qm.score_of(card, TaskType::Package).await?,
        Some(to_score(now))
    );
    assert_eq!(a.qm.score_of(card, TaskType::Protect).await?, None);
    assert_eq!(a.qm.score_of(card, TaskType::Carddata).await?, None);
    // Idempotent.
    assert_eq!(
        a.qm.align(&[(card, wanted)], now).await?,
        Aligned::default()
    );
    Ok(())
}
