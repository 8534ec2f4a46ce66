//! `cmp-worker check [--repair]` (lifecycle's [`QueueChecker`]) on real PostgreSQL and Redis:
//! every kind of finding is reported with its count and examples, `repair` fixes each one and
//! leaves every correct entry's score exactly as it was, and a second run is clean.

mod common;

use chrono::Duration as Span;
use common::{SHARDS, World, config, intervals, t0};
use domain::{CardId, TaskType};
use fred::prelude::*;
use fred::types::Value;
use lifecycle::{CheckReport, CheckSettings, Kind, QueueChecker};
use polling_queue::to_score;
use std::collections::BTreeMap;
use std::sync::Arc;

type Snapshot = BTreeMap<(u32, TaskType, String), f64>;

/// Every entry of every queue key, members as strings (a corrupt member shows up too).
async fn snapshot(w: &World) -> anyhow::Result<Snapshot> {
    let mut out = Snapshot::new();
    for task in TaskType::ALL {
        for shard in 0..SHARDS {
            let key = w.keys.shard_queue(shard, task);
            let raw: Vec<Value> = w.pool.zrange(key, 0, -1, None, false, None, true).await?;
            for pair in raw.chunks(2) {
                let member = pair[0].as_string().unwrap_or_default();
                let score = pair[1].as_f64().unwrap_or_default();
                out.insert((shard, task, member), score);
            }
        }
    }
    Ok(out)
}

fn checker(w: &World, repair: bool) -> QueueChecker {
    QueueChecker::new(
        w.cards(),
        w.queue.clone(),
        w.configs.clone(),
        Arc::new(w.clock.clone()),
        CheckSettings {
            shard_count: SHARDS,
            // Small pages and scan steps, so that paging and cursors are exercised.
            page_size: 3,
            scan_count: 2,
            examples: 10,
            repair,
        },
    )
}

fn examples(report: &CheckReport, kind: Kind) -> Vec<(String, TaskType)> {
    let mut e = report.of(kind).examples.clone();
    e.sort();
    e.dedup();
    e
}

fn entry(member: i64, task: TaskType) -> (String, TaskType) {
    (member.to_string(), task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_every_kind_and_repair_fixes_them_without_moving_correct_scores()
-> anyhow::Result<()> {
    let w = World::new().await?;
    let mut input = config("carrier 1", 10, intervals(600, 300, 3600, None));
    input.carrier_id = Some(domain::CarrierId(1));
    w.add_config(input).await?;
    let scheduled = [TaskType::Realname, TaskType::Carddata, TaskType::Package];
    // Correct cards 1..=5, each queued for its three types at distinct scores.
    for id in 1..=5 {
        w.card_with_id(id, true, None).await?;
        for (k, task) in scheduled.into_iter().enumerate() {
            let at = t0() + Span::seconds(id * 10 + k as i64);
            w.queue.requeue(CardId(id), task, at).await?;
        }
    }
    // Missing: card 11 is not queued for carddata.
    w.card_with_id(11, true, None).await?;
    w.queue
        .requeue(CardId(11), TaskType::Realname, t0())
        .await?;
    w.queue.requeue(CardId(11), TaskType::Package, t0()).await?;
    // Unscheduled: card 12 is queued for protect; card 20 (carrier 2) matches no config.
    w.card_with_id(12, true, None).await?;
    for task in TaskType::ALL {
        w.queue.requeue(CardId(12), task, t0()).await?;
    }
    w.sql(
        "INSERT INTO tb_iot_card (id, iccid, carrier_id, real_name_status, network_status) \
           VALUES (20, 'iccid-20', 2, 1, 1)",
    )
    .await?;
    w.queue
        .requeue(CardId(20), TaskType::Realname, t0())
        .await?;
    // Not live: polling disabled (13), deleted (14), device polling disabled (15), unknown
    // (999), not an id.
    w.card_with_id(13, false, None).await?;
    w.card_with_id(14, true, None).await?;
    w.sql("UPDATE tb_iot_card SET deleted_at = now() WHERE id = 14")
        .await?;
    w.device_with_id(5, false).await?;
    w.card_with_id(15, true, Some(5)).await?;
    for id in [13, 14, 15, 999] {
        w.queue
            .requeue(CardId(id), TaskType::Realname, t0())
            .await?;
    }
    let junk_key = w.keys.shard_queue(0, TaskType::Carddata);
    let _: () = w
        .pool
        .zadd(&junk_key, None, None, false, false, (to_score(t0()), "abc"))
        .await?;
    // Wrong shard: card 1 also on shard 2 for carddata (its own shard is 1).
    let wrong_key = w.keys.shard_queue(2, TaskType::Carddata);
    let _: () = w
        .pool
        .zadd(&wrong_key, None, None, false, false, (to_score(t0()), "1"))
        .await?;

    let report = checker(&w, false).run().await?;
    assert_eq!(report.cards, 8, "1..=5, 11, 12, 20");
    assert_eq!(report.of(Kind::Missing).count, 1);
    assert_eq!(
        examples(&report, Kind::Missing),
        [entry(11, TaskType::Carddata)]
    );
    assert_eq!(report.of(Kind::Unscheduled).count, 2);
    assert_eq!(
        examples(&report, Kind::Unscheduled),
        [entry(12, TaskType::Protect), entry(20, TaskType::Realname)]
    );
    assert_eq!(report.of(Kind::NotLive).count, 5);
    assert_eq!(
        examples(&report, Kind::NotLive),
        [
            entry(13, TaskType::Realname),
            entry(14, TaskType::Realname),
            entry(15, TaskType::Realname),
            entry(999, TaskType::Realname),
            ("abc".to_owned(), TaskType::Carddata),
        ]
    );
    assert_eq!(report.of(Kind::WrongShard).count, 1);
    assert_eq!(
        examples(&report, Kind::WrongShard),
        [entry(1, TaskType::Carddata)]
    );
    assert!(!report.clean());
    assert!(report.findings.iter().all(|f| f.repaired == 0));

    let before = snapshot(&w).await?;
    let repaired = checker(&w, true).run().await?;
    assert_eq!(
        repaired.findings.each_ref().map(|f| f.count),
        report.findings.each_ref().map(|f| f.count)
    );
    assert_eq!(
        repaired.findings.each_ref().map(|f| f.repaired),
        [1, 2, 5, 1]
    );
    let after = snapshot(&w).await?;

    // Every entry that was right is still there with the very same score.
    let wrong: Vec<(u32, TaskType, String)> = vec![
        (12 % SHARDS, TaskType::Protect, "12".into()),
        (20 % SHARDS, TaskType::Realname, "20".into()),
        (13 % SHARDS, TaskType::Realname, "13".into()),
        (14 % SHARDS, TaskType::Realname, "14".into()),
        (15 % SHARDS, TaskType::Realname, "15".into()),
        (999 % SHARDS, TaskType::Realname, "999".into()),
        (0, TaskType::Carddata, "abc".into()),
        (2, TaskType::Carddata, "1".into()),
    ];
    let mut expected = before.clone();
    for key in &wrong {
        assert!(expected.remove(key).is_some(), "{key:?} was queued");
    }
    let added = (11 % SHARDS, TaskType::Carddata, "11".to_owned());
    let added_score = after.get(&added).copied();
    let now = to_score(t0());
    assert!(
        added_score.is_some_and(|s| (now..now + 300.0).contains(&s)),
        "card 11 added within one carddata interval of now: {added_score:?}"
    );
    expected.insert(added, added_score.unwrap_or_default());
    assert_eq!(after, expected);

    let again = checker(&w, false).run().await?;
    assert!(again.clean(), "{again:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_of_an_initialised_fleet_is_clean() -> anyhow::Result<()> {
    let w = World::new().await?;
    w.add_config(config("all", 10, intervals(600, 300, 3600, Some(120))))
        .await?;
    for id in 1..=40 {
        w.card_with_id(id, id % 7 != 0, None).await?;
    }
    let initializer = lifecycle::CardInitializer::new(
        w.cards(),
        w.configs.clone(),
        w.pool.clone(),
        w.keys.clone(),
        Arc::new(w.clock.clone()),
        lifecycle::InitSettings {
            shard_count: SHARDS,
            page_size: 7,
            ..lifecycle::InitSettings::default()
        },
    );
    initializer.run(lifecycle::InitMode::Initial).await?;
    let report = checker(&w, false).run().await?;
    assert!(report.clean(), "{report:?}");
    assert_eq!(report.cards, 35);
    assert_eq!(report.members, 35 * 4);
    Ok(())
}
