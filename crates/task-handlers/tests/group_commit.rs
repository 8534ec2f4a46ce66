//! The usage writes of concurrent polls are group-committed (`store`'s `batch/usage.rs`): the
//! exactness of `exact.rs` must hold in the batch, and a batch that dies with its connection
//! must write nothing, lose no card and count no megabyte twice.

mod common;

use common::{CardSpec, World, iccid};
use domain::{CardId, PackageOwner, TaskType};
use gateway_sim::{FaultsPatch, SimCardPatch};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use sea_orm::{ConnectionTrait, Database, Statement, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use task_handlers::Outcome;

const CARDS: i64 = 120;

async fn sum_of_deltas(w: &World, card: i64) -> Decimal {
    let rows = w
        .query(
            "SELECT COALESCE(SUM(delta_mb), 0) AS s FROM tb_data_usage_record WHERE iot_card_id = $1",
            vec![Value::from(card)],
        )
        .await;
    rows[0].try_get::<Decimal>("", "s").expect("sum")
}

/// Usage polls of 120 cards, two at once per card, while every connection of the test
/// database is killed (`pg_terminate_backend`) every 25 ms: batches die between their
/// statements, or after the server committed but before the worker heard it. Afterwards, for
/// every card: still queued for carddata, and the recorded deltas, the month counters and the
/// lifetime counter all equal the carrier's month total.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_connections_mid_batch_lose_no_card_and_count_no_megabyte_twice() {
    let w = World::new().await;
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(10),
            jitter_ms: Some(10),
            ..FaultsPatch::default()
        })
        .expect("faults");
    let ids: Vec<i64> = (1..=CARDS).map(|i| 1_000 + i).collect();
    for &id in &ids {
        let card = w.card(CardSpec::new(id)).await;
        w.sim
            .state()
            .patch_card(
                &iccid(id),
                SimCardPatch {
                    growth_mb_per_query: Some(dec!(0.5)),
                    ..Default::default()
                },
            )
            .expect("patch")
            .expect("sim card");
        w.add_package(w.package(PackageOwner::Card(card), None, dec!(0)))
            .await;
    }

    let killing = Arc::new(AtomicBool::new(true));
    let killed = Arc::new(AtomicU64::new(0));
    let killer = {
        let (url, killing, killed) = (w.env.db.url.clone(), killing.clone(), killed.clone());
        tokio::spawn(async move {
            let db = Database::connect(url.as_str())
                .await
                .expect("killer connects");
            let sql = "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity \
                       WHERE datname = current_database() AND pid <> pg_backend_pid()";
            while killing.load(Ordering::Relaxed) {
                let statement = Statement::from_string(db.get_database_backend(), sql);
                if let Ok(Some(row)) = db.query_one_raw(statement).await {
                    let n: i64 = row.try_get("", "n").unwrap_or(0);
                    killed.fetch_add(n as u64, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
    };

    let mut failures = 0;
    let world = &w;
    for _round in 0..6 {
        let polls = ids
            .iter()
            .flat_map(|id| [0, 1].map(move |_| world.handle(TaskType::Carddata, CardId(*id))));
        failures += futures::future::join_all(polls)
            .await
            .into_iter()
            .filter(|outcome| *outcome == Outcome::Failure)
            .count();
    }
    killing.store(false, Ordering::Relaxed);
    killer.await.expect("killer");
    assert!(
        killed.load(Ordering::Relaxed) > 0,
        "the killer terminated connections"
    );
    assert!(failures > 0, "some batches died with their connection");

    // One last poll of each card, alone: its answer is the carrier's total. The pool may still
    // hold connections killed meanwhile; a poll that meets one fails and is polled again.
    for &id in &ids {
        let mut outcome = Outcome::Failure;
        for _try in 0..5 {
            outcome = w.handle(TaskType::Carddata, CardId(id)).await;
            if outcome == Outcome::Success {
                break;
            }
        }
        assert_eq!(outcome, Outcome::Success, "card {id}: last poll");
    }
    for &id in &ids {
        let carrier = w.sim.state().card(&iccid(id)).expect("sim card");
        let card = w.db_card(CardId(id)).await;
        assert!(
            w.score(CardId(id), TaskType::Carddata).await.is_some(),
            "card {id} still queued for carddata"
        );
        assert_eq!(
            sum_of_deltas(&w, id).await,
            carrier.month_total_mb,
            "card {id}: recorded deltas vs the carrier's month total ({} queries)",
            carrier.usage_queries
        );
        assert_eq!(card.usage.current_month_usage_mb, carrier.month_total_mb);
        assert_eq!(card.data_usage_mb, carrier.month_total_mb);
    }
}

/// Two cards of one device polled at once (usually one batch) both deduct from the device's
/// one package: each deduction sees the other's (a batch keeps the package's `used_mb` as the
/// earlier polls of the batch left it, and writes the sum: `UPDATE … FROM UNNEST` would apply
/// only one of two rows for the same package).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_cards_of_one_device_polled_together_both_deduct_from_its_package() {
    let w = World::new().await;
    let device = w.device("DEV-BATCH").await;
    let cards = [CardId(301), CardId(302)];
    for (card, total) in cards.iter().zip([dec!(40), dec!(25)]) {
        w.card(CardSpec {
            month_total_mb: total,
            ..CardSpec::new(card.get()).on(device)
        })
        .await;
    }
    w.add_package(w.package(PackageOwner::Device(device), Some(dec!(1000)), dec!(0)))
        .await;

    let outcomes =
        futures::future::join_all(cards.iter().map(|card| w.handle(TaskType::Carddata, *card)))
            .await;

    assert!(
        outcomes.iter().all(|o| *o == Outcome::Success),
        "{outcomes:?}"
    );
    let used = w
        .query(
            "SELECT used_mb FROM tb_package_usage WHERE device_id = $1",
            vec![Value::from(device.get())],
        )
        .await;
    assert_eq!(
        used[0].try_get::<Decimal>("", "used_mb").expect("used"),
        dec!(65),
        "both cards' megabytes deducted from the device's package"
    );
}
