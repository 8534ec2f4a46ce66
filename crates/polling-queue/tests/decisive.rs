//! The decisive lanes: cards whose next poll may stop or resume them are taken before an older
//! backlog, and a pick never makes a card come before its time, twice at once, or back after
//! its removal.

mod common;

use chrono::{DateTime, Duration as Span, Utc};
use common::{TestRedis, server_now};
use domain::{CardId, ManualClock, TaskType};
use fred::prelude::*;
use polling_queue::{Keys, PollingQueueManager, QueueSettings, RedisKey, is_lease_score};
use std::sync::Arc;

const T: TaskType = TaskType::Carddata;

async fn manager(redis: &TestRedis) -> anyhow::Result<(PollingQueueManager, DateTime<Utc>)> {
    let now = server_now(&redis.pool().await?).await?;
    let qm = PollingQueueManager::new(
        redis.pool().await?,
        Keys::new(redis.prefix.clone()),
        QueueSettings::default(),
        Arc::new(ManualClock::new(now)),
    );
    Ok((qm, now))
}

/// `card` queued, then rescheduled by its poll at `at`, decisive or not.
async fn polled(
    qm: &PollingQueueManager,
    card: CardId,
    at: DateTime<Utc>,
    decisive: bool,
) -> anyhow::Result<()> {
    qm.requeue(card, T, at - Span::seconds(300)).await?;
    if decisive {
        qm.reschedule_decisive(card, T, at).await?;
    } else {
        qm.reschedule(card, T, at).await?;
    }
    Ok(())
}

#[tokio::test]
async fn decisive_cards_are_taken_before_an_older_backlog() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let (qm, now) = manager(&redis).await?;
    // A backlog of 160 cards due ten minutes ago, and five decisive cards due since 1-5 s.
    let backlog: Vec<(CardId, DateTime<Utc>)> = (1..=160)
        .map(|i| (CardId(i), now - Span::seconds(600)))
        .collect();
    qm.requeue_many(T, &backlog).await?;
    let decisive: Vec<CardId> = (1001..=1005).map(CardId).collect();
    for (i, card) in decisive.iter().enumerate() {
        polled(&qm, *card, now - Span::seconds(5 - i as i64), true).await?;
    }
    assert_eq!(qm.decisive_len(T).await?, 5);
    let lane: u64 = redis
        .pool()
        .await?
        .zcard(Keys::new(redis.prefix.clone()).render(&RedisKey::Decisive { task: T }))
        .await?;
    assert_eq!(lane, 5, "the lane is `polling:decisive:{{type}}`");

    // Earliest first, leased in their shard queues like a dequeue.
    let first = qm.take_decisive(T, 3).await?;
    assert_eq!(first.cards, decisive[..3].to_vec());
    assert_eq!(
        first.next_due_in,
        Some(std::time::Duration::ZERO),
        "more are due"
    );
    for card in &decisive[..3] {
        let score = qm.score_of(*card, T).await?.unwrap_or_default();
        assert!(is_lease_score(score), "card {card} leased: {score}");
    }
    assert_eq!(qm.take_decisive(T, 10).await?.cards, decisive[3..].to_vec());
    let empty = qm.take_decisive(T, 10).await?;
    assert!(empty.cards.is_empty());
    assert_eq!(empty.next_due_in, None, "an empty lane");
    assert_eq!(qm.decisive_len(T).await?, 0, "taken picks leave the lane");

    // The shard queues still serve the backlog, and not the decisive cards again (leased).
    let mut rest = Vec::new();
    for shard in 0..16 {
        rest.extend(qm.dequeue_ready(shard, T, 1_000).await?);
    }
    rest.sort();
    assert_eq!(rest, backlog.iter().map(|(c, _)| *c).collect::<Vec<_>>());
    Ok(())
}

#[tokio::test]
async fn a_pick_never_polls_a_card_early_twice_or_after_its_removal() -> anyhow::Result<()> {
    let redis = TestRedis::new().await?;
    let (qm, now) = manager(&redis).await?;
    let due = now - Span::seconds(1);
    let later = now + Span::seconds(3600);

    // Decisive, but not due yet: stays in the lane until it is.
    let waiting = CardId(1);
    polled(&qm, waiting, later, true).await?;
    // Picked when its poll was decisive, then polled and rescheduled later as a plain card.
    let stale = CardId(2);
    polled(&qm, stale, due, true).await?;
    qm.reschedule(stale, T, later).await?;
    // Picked, then removed from every queue (deleted or disabled).
    let removed = CardId(3);
    polled(&qm, removed, due, true).await?;
    qm.on_card_deleted(removed).await?;
    // Picked, then dequeued from its shard queue by another node: in flight.
    let in_flight = CardId(4);
    polled(&qm, in_flight, due, true).await?;
    assert_eq!(
        qm.dequeue_ready(in_flight.shard(16), T, 10).await?,
        vec![in_flight]
    );
    let lease = qm.score_of(in_flight, T).await?;
    // Picked again by a later decisive poll: one pick per card, the latest time.
    let moved = CardId(5);
    polled(&qm, moved, due, true).await?;
    qm.reschedule_decisive(moved, T, later).await?;

    let taken = qm.take_decisive(T, 10).await?;
    assert!(taken.cards.is_empty());
    // The earliest pick left is due in an hour (the waiting and the moved card).
    let wait = taken.next_due_in.unwrap_or_default().as_secs();
    assert!((3590..=3600).contains(&wait), "next pick due in {wait} s");
    assert_eq!(
        qm.score_of(stale, T).await?,
        Some(later.timestamp_millis() as f64 / 1000.0)
    );
    assert_eq!(
        qm.score_of(removed, T).await?,
        None,
        "a removed card is not brought back"
    );
    assert_eq!(
        qm.score_of(in_flight, T).await?,
        lease,
        "the lease is untouched"
    );
    let keys = Keys::new(redis.prefix.clone());
    let left: Vec<String> = redis
        .pool()
        .await?
        .zrange(
            keys.render(&RedisKey::Decisive { task: T }),
            0,
            -1,
            None,
            false,
            None,
            false,
        )
        .await?;
    assert_eq!(
        left,
        vec!["1".to_owned(), "5".to_owned()],
        "only the picks not due yet stay"
    );
    Ok(())
}
