//! The engine exact under concurrency and state changes (`docs/invariants.md`, invariants 1, 7, 8):
//! several task types of one card polled at once against a slow, jittery carrier; a poll that
//! changes a fact config matching reads; a card disabled behind the lifecycle's back.

mod common;

use common::{CARDDATA_SECS, CardSpec, PACKAGE_SECS, World, assert_score, config_input, iccid};
use domain::{
    CardCondition, Intervals, NetworkStatus, PackageOwner, PollingConfigInput, RealNameStatus,
    StopReason, TaskType,
};
use fred::prelude::*;
use gateway_sim::{FaultsPatch, SimCardPatch};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use sea_orm::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use task_handlers::Outcome;

/// A config of higher priority than the world's "all cards" one.
fn config(name: &str, condition: CardCondition, intervals: Intervals) -> PollingConfigInput {
    PollingConfigInput {
        name: name.into(),
        priority: 1,
        card_condition: Some(condition),
        intervals,
        ..config_input()
    }
}

async fn add_config(w: &World, input: PollingConfigInput) {
    w.stores.configs.insert(&input).await.expect("config");
    w.configs.refresh().await.expect("refresh");
}

async fn sum_of_deltas(w: &World, card: i64) -> Decimal {
    let rows = w
        .query(
            "SELECT COALESCE(SUM(delta_mb), 0) AS s FROM tb_data_usage_record WHERE iot_card_id = $1",
            vec![Value::from(card)],
        )
        .await;
    rows[0].try_get::<Decimal>("", "s").expect("sum")
}

/// The reproduction of the double count (`docs/decisions.md`, "Exact facts under
/// concurrency"): 20 cards, the four task types polled at once (and two usage polls
/// of the same card at once, as a manual trigger racing a dequeue on another node would), a
/// carrier answering in 150 ± 150 ms with usage growing on every query and real-name flipping
/// underneath. For every card the recorded deltas add up to the carrier's month total at the
/// last poll, and so do the card's counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_handlers_at_once_count_every_megabyte_once() {
    every_megabyte_once(World::new().await).await;
}

/// The same on a carrier answering 100 cards a call (OneLink), through the batched dispatch:
/// the usage and real-name queries of concurrent polls share batch calls, and a card polled
/// twice at once may sit in one batch twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_handlers_at_once_count_every_megabyte_once_with_batching() {
    let (w, _router) = World::for_carrier(domain::CarrierProtocol::OneLink, |_| {}).await;
    // The real-name flipping stops and starts cards faster than OneLink's change lock allows;
    // the lock is its own scenario (carriers.rs), not this one's.
    w.sim.state().set_account(
        domain::CarrierProtocol::OneLink,
        gateway_sim::SimAccountPatch {
            change_lock_secs: Some(0),
            ..Default::default()
        },
    );
    every_megabyte_once(w).await;
}

async fn every_megabyte_once(w: World) {
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(150),
            jitter_ms: Some(150),
            ..FaultsPatch::default()
        })
        .expect("faults");
    let ids: Vec<i64> = (1..=20).map(|i| 500 + i).collect();
    for &id in &ids {
        let card = w
            .card(CardSpec {
                month_total_mb: dec!(3),
                ..CardSpec::new(id)
            })
            .await;
        w.sim
            .state()
            .patch_card(
                &iccid(id),
                SimCardPatch {
                    growth_mb_per_query: Some(dec!(1.25)),
                    ..Default::default()
                },
            )
            .expect("patch")
            .expect("sim card");
        // Unlimited: usage never stops the card, so every poll counts.
        w.add_package(w.package(PackageOwner::Card(card), None, dec!(0)))
            .await;
    }
    let flipping = Arc::new(AtomicBool::new(true));
    let flipper = {
        let (sim, flipping, ids) = (w.sim.state().clone(), flipping.clone(), ids.clone());
        tokio::spawn(async move {
            let mut verified = false;
            while flipping.load(Ordering::Relaxed) {
                verified = !verified;
                let status = if verified {
                    RealNameStatus::Verified
                } else {
                    RealNameStatus::NotVerified
                };
                for id in &ids {
                    let patch = SimCardPatch {
                        real_name_status: Some(status),
                        ..Default::default()
                    };
                    let _ = sim.patch_card(&iccid(*id), patch);
                }
                tokio::time::sleep(std::time::Duration::from_millis(70)).await;
            }
        })
    };

    let kinds = [
        TaskType::Realname,
        TaskType::Carddata,
        TaskType::Carddata,
        TaskType::Package,
        TaskType::Protect,
    ];
    let world = &w;
    for _round in 0..5 {
        let polls = ids.iter().flat_map(|id| {
            kinds
                .iter()
                .map(move |task| world.handle(*task, domain::CardId(*id)))
        });
        futures::future::join_all(polls).await;
    }
    flipping.store(false, Ordering::Relaxed);
    flipper.await.expect("flipper");
    // One last usage poll of each card, alone: its answer is the carrier's total.
    for &id in &ids {
        assert_eq!(
            w.handle(TaskType::Carddata, domain::CardId(id)).await,
            Outcome::Success
        );
    }

    for &id in &ids {
        let carrier = w.sim.state().card(&iccid(id)).expect("sim card");
        let card = w.db_card(domain::CardId(id)).await;
        assert_eq!(
            sum_of_deltas(&w, id).await,
            carrier.month_total_mb,
            "card {id}: recorded deltas vs the carrier's month total ({} queries)",
            carrier.usage_queries
        );
        assert_eq!(card.usage.current_month_usage_mb, carrier.month_total_mb);
        assert_eq!(card.usage.last_gateway_total_mb, carrier.month_total_mb);
        assert_eq!(card.data_usage_mb, carrier.month_total_mb);
    }
}

/// A card whose real-name changes is queued again (`docs/rules.md`, "Lifecycle", second row),
/// with configs like the default ones: a card that is not real-named is polled for real-name
/// and usage only; once the carrier verifies it, it matches the config for real-named cards and is queued, due now, for package and protect.
#[tokio::test]
async fn verification_queues_the_types_the_new_config_schedules() {
    let w = World::new().await;
    add_config(
        &w,
        config(
            "not real-named",
            CardCondition::NotRealname,
            Intervals {
                realname_interval_secs: Some(60),
                carddata_interval_secs: Some(CARDDATA_SECS as u32),
                package_interval_secs: None,
                protect_interval_secs: None,
            },
        ),
    )
    .await;
    let device = w.device("DEV-1").await;
    let card = w.card(CardSpec::new(100).not_real_named().on(device)).await;
    // As the initializer would have queued it: realname and carddata only.
    for task in [TaskType::Package, TaskType::Protect] {
        let key = w.keys.shard_queue(card.shard(16), task);
        let _: i64 = w.pool.zrem(key, card.to_string()).await.expect("zrem");
    }
    w.sim
        .state()
        .patch_card(
            &iccid(100),
            SimCardPatch {
                real_name_status: Some(RealNameStatus::Verified),
                ..Default::default()
            },
        )
        .expect("patch")
        .expect("sim card");

    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);

    assert_eq!(
        w.db_card(card).await.facts.real_name_status,
        RealNameStatus::Verified
    );
    for task in [TaskType::Package, TaskType::Protect] {
        assert_score(w.score(card, task).await, w.at(0), "added, due now");
    }
    assert_score(
        w.score(card, TaskType::Realname).await,
        w.at(common::REALNAME_SECS),
        "the realname poll rescheduled at the new config's interval",
    );
    assert!(w.score(card, TaskType::Carddata).await.is_some(), "kept");
}

/// A stop changes the network status, which config matching reads: the card leaves the queues
/// its new config does not schedule and keeps the others.
#[tokio::test]
async fn a_stop_moves_the_card_to_the_queues_of_its_new_config() {
    let w = World::new().await;
    add_config(
        &w,
        config(
            "stopped cards",
            CardCondition::Stopped,
            Intervals {
                realname_interval_secs: None,
                carddata_interval_secs: None,
                package_interval_secs: Some(PACKAGE_SECS as u32),
                protect_interval_secs: None,
            },
        ),
    )
    .await;
    let card = w
        .card(CardSpec {
            month_total_mb: dec!(150),
            ..CardSpec::new(200)
        })
        .await;
    w.add_package(w.package(PackageOwner::Card(card), Some(dec!(100)), dec!(0)))
        .await;

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::TrafficExhausted))
    );
    for task in [TaskType::Realname, TaskType::Carddata, TaskType::Protect] {
        assert_eq!(
            w.score(card, task).await,
            None,
            "{task} no longer scheduled"
        );
    }
    assert!(
        w.score(card, TaskType::Package).await.is_some(),
        "package kept"
    );
}

/// A reason change without a carrier call aligns the queues too (the fault suite's card 154):
/// the card is stopped for `not_realname` and queued as its old config ("not real-named")
/// schedules, while the database already says real-named (the alignment of that change lost a
/// race). Its realname poll finds nothing new, re-evaluates, and the table only rewrites the
/// reason (`not_realname` -> `traffic_exhausted`, `not_called`); the card now matches
/// "stopped cards", and is queued for what that config schedules.
#[tokio::test]
async fn a_reason_change_without_a_carrier_call_moves_the_card_to_the_queues_of_its_config() {
    let w = World::new().await;
    add_config(
        &w,
        config(
            "not real-named",
            CardCondition::NotRealname,
            Intervals {
                realname_interval_secs: Some(60),
                carddata_interval_secs: Some(CARDDATA_SECS as u32),
                package_interval_secs: None,
                protect_interval_secs: None,
            },
        ),
    )
    .await;
    add_config(
        &w,
        config(
            "stopped cards",
            CardCondition::Stopped,
            Intervals {
                realname_interval_secs: Some(60),
                carddata_interval_secs: None,
                package_interval_secs: Some(PACKAGE_SECS as u32),
                protect_interval_secs: Some(60),
            },
        ),
    )
    .await;
    let device = w.device("DEV-154").await;
    let card = w
        .card(
            CardSpec::new(154)
                .stopped(StopReason::NotRealname)
                .on(device),
        )
        .await;
    for task in [TaskType::Package, TaskType::Protect] {
        let key = w.keys.shard_queue(card.shard(16), task);
        let _: i64 = w.pool.zrem(key, card.to_string()).await.expect("zrem");
    }
    w.add_package(w.package(PackageOwner::Device(device), Some(dec!(100)), dec!(150)))
        .await;

    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::TrafficExhausted))
    );
    let log = w
        .stores
        .cards
        .state_log(card, domain::store::Page::new(1, 10))
        .await
        .expect("log");
    assert_eq!(log.total, 1);
    assert_eq!(
        log.items[0].entry.gateway_outcome,
        domain::GatewayOutcome::NotCalled
    );
    for task in [TaskType::Package, TaskType::Protect] {
        assert_score(w.score(card, task).await, w.at(0), "added, due now");
    }
    assert_eq!(
        w.score(card, TaskType::Carddata).await,
        None,
        "carddata no longer scheduled"
    );
    let sim = w.sim.state().card(&iccid(154)).expect("sim card");
    assert_eq!((sim.stop_calls, sim.start_calls), (0, 0), "no carrier call");
}

/// A card disabled without the lifecycle hearing of it (a ZADD racing with the disable) is
/// removed from every queue by its next poll, which asks the carrier nothing.
#[tokio::test]
async fn disabled_card_leaves_every_queue_at_its_next_poll() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(300)).await;
    w.exec(
        "UPDATE tb_iot_card SET enable_polling = false WHERE id = $1",
        vec![Value::from(300_i64)],
    )
    .await;

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Skipped);

    for task in TaskType::ALL {
        assert_eq!(w.score(card, task).await, None, "{task}");
    }
    let sim = w.sim.state().card(&iccid(300)).expect("sim card");
    assert_eq!(sim.usage_queries, 0, "the carrier was not asked");
}

/// The same when the device's switch is off.
#[tokio::test]
async fn card_of_a_disabled_device_leaves_every_queue_at_its_next_poll() {
    let w = World::new().await;
    let device = w.device("DEV-OFF").await;
    let card = w.card(CardSpec::new(301).on(device)).await;
    w.exec(
        "UPDATE tb_device SET enable_polling = false WHERE id = $1",
        vec![Value::from(device.get())],
    )
    .await;

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Skipped);

    for task in TaskType::ALL {
        assert_eq!(w.score(card, task).await, None, "{task}");
    }
    let sim = w.sim.state().card(&iccid(301)).expect("sim card");
    assert_eq!(sim.usage_queries, 0, "the carrier was not asked");
}
