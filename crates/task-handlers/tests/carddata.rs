//! The usage poll: every scenario of the seed, end to end.

mod common;

use chrono::NaiveDate;
use common::{CARDDATA_SECS, CardSpec, RETRY_SECS, World, assert_score, iccid};
use domain::{CardId, NetworkStatus, PackageOwner, StopReason, TaskType};
use gateway::CallKind;
use gateway_sim::{Hang, Script, ScriptStep, SimCardPatch};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use sea_orm::Value;
use task_handlers::Outcome;
use tracing_test::traced_test;

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).expect("valid date")
}

/// Sets the card's month counters as a previous poll left them.
async fn counters(
    w: &World,
    card: CardId,
    start: NaiveDate,
    usage: Decimal,
    baseline: Decimal,
    last_month: Decimal,
) {
    let sql = "UPDATE tb_iot_card SET current_month_start_date = $2, current_month_usage_mb = $3, \
               last_gateway_total_mb = $4, last_month_total_mb = $5, data_usage_mb = $3 WHERE id = $1";
    let values: Vec<Value> = vec![
        card.get().into(),
        start.into(),
        usage.into(),
        baseline.into(),
        last_month.into(),
    ];
    assert_eq!(w.exec(sql, values).await, 1);
}

/// `(delta_mb, month_total_mb)` of the card's usage records, oldest first.
async fn records(w: &World, card: CardId) -> Vec<(Decimal, Decimal)> {
    let rows = w
        .query(
            "SELECT delta_mb, month_total_mb FROM tb_data_usage_record WHERE iot_card_id = $1 ORDER BY id",
            vec![card.get().into()],
        )
        .await;
    rows.iter()
        .map(|r| {
            (
                r.try_get("", "delta_mb").expect("delta"),
                r.try_get("", "month_total_mb").expect("total"),
            )
        })
        .collect()
}

/// Seed: cardID=100, current_month_start_date=2026-03-01, today 2026-04-02, the carrier reports
/// 500 MB for April -> last month saved, current 500, start 2026-04-01, one usage record.
#[tokio::test]
#[traced_test]
async fn rollover_march_to_april_with_500_mb() {
    let w = World::new().await;
    // The sim's clock is the world's (2026-04-02 in Shanghai): it reports the April total.
    let card = w
        .card(CardSpec {
            month_total_mb: dec!(500),
            ..CardSpec::new(100)
        })
        .await;
    counters(&w, card, date(2026, 3, 1), dec!(820), dec!(820), dec!(700)).await;
    let pkg = w
        .add_package(w.package(PackageOwner::Card(card), Some(dec!(2048)), dec!(0)))
        .await;

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(c.usage.current_month_start_date, Some(date(2026, 4, 1)));
    assert_eq!(c.usage.last_month_total_mb, dec!(820), "March saved");
    assert_eq!(c.usage.current_month_usage_mb, dec!(500));
    assert_eq!(
        c.usage.last_gateway_total_mb,
        dec!(500),
        "the new month's baseline"
    );
    assert_eq!(c.data_usage_mb, dec!(1320));
    assert_eq!(records(&w, card).await, vec![(dec!(500), dec!(500))]);
    let pkgs = w.packages_of(PackageOwner::Card(card)).await;
    assert_eq!(
        pkgs.iter().find(|p| p.id == pkg.id).map(|p| p.spec.used_mb),
        Some(dec!(500)),
        "deducted"
    );
    logs_assert(common::line_with(&["流量跨月", "card_id=100"]));
    assert_score(
        w.score(card, TaskType::Carddata).await,
        w.at(CARDDATA_SECS),
        "interval",
    );

    // The next poll of April counts against April's total, never negative.
    let patch = SimCardPatch {
        month_total_mb: Some(dec!(530)),
        ..Default::default()
    };
    w.sim
        .state()
        .patch_card(&iccid(100), patch)
        .expect("patch")
        .expect("sim card");
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    let c = w.db_card(card).await;
    assert_eq!(c.usage.current_month_usage_mb, dec!(530));
    assert_eq!(
        records(&w, card).await,
        vec![(dec!(500), dec!(500)), (dec!(30), dec!(530))]
    );
}

/// Seed: cardID=200, start 2026-04-01, baseline 100 (kept in `last_gateway_total_mb`,
/// `docs/rules.md`, "Month rollover"), the carrier reports 150 -> delta 50.
#[tokio::test]
async fn same_month_100_to_150_is_50() {
    let w = World::new().await;
    let card = w
        .card(CardSpec {
            month_total_mb: dec!(150),
            ..CardSpec::new(200)
        })
        .await;
    counters(&w, card, date(2026, 4, 1), dec!(100), dec!(100), dec!(0)).await;
    w.add_package(w.package(PackageOwner::Card(card), Some(dec!(1024)), dec!(100)))
        .await;

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(c.usage.current_month_usage_mb, dec!(150));
    assert_eq!(c.usage.last_gateway_total_mb, dec!(150));
    assert_eq!(c.usage.current_month_start_date, Some(date(2026, 4, 1)));
    assert_eq!(c.data_usage_mb, dec!(150));
    assert_eq!(records(&w, card).await, vec![(dec!(50), dec!(150))]);
    assert_eq!(
        w.packages_of(PackageOwner::Card(card)).await[0]
            .spec
            .used_mb,
        dec!(150)
    );
    assert_eq!(
        w.calls(card),
        (0, 0),
        "valid package, traffic left: nothing to do"
    );
}

/// Seed: cardID=300, the gateway times out -> no write, warn log, rescheduled at the retry
/// interval, `Failure` (no retry at the dispatch level).
#[tokio::test]
#[traced_test]
async fn card_300_gateway_timeout_writes_nothing() {
    let w = World::new().await;
    let card = w
        .card(CardSpec {
            month_total_mb: dec!(150),
            ..CardSpec::new(300)
        })
        .await;
    counters(&w, card, date(2026, 4, 1), dec!(100), dec!(100), dec!(0)).await;
    let before = w.db_card(card).await;
    w.sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Hang(Hang::Hang)],
        call: Some(CallKind::Usage),
    });

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Failure);

    let after = w.db_card(card).await;
    assert_eq!(after.updated_at, before.updated_at, "no write");
    assert_eq!(after.usage, before.usage);
    assert!(records(&w, card).await.is_empty());
    logs_assert(common::line_with(&[
        "WARN",
        "流量查询失败",
        "card_id=300",
        "error=gateway timeout",
    ]));
    assert_score(
        w.score(card, TaskType::Carddata).await,
        w.at(RETRY_SECS),
        "retry interval",
    );
    let stats = w.counters.read(TaskType::Carddata).await.expect("stats");
    assert_eq!((stats.success, stats.failure), (0, 1));
}

/// Seed: usage reaches the limit -> the handler only writes; `evaluate_and_act` stops the card
/// for traffic_exhausted.
#[tokio::test]
async fn exhaustion_is_decided_by_stop_resume() {
    let w = World::new().await;
    let card = w
        .card(CardSpec {
            month_total_mb: dec!(150),
            ..CardSpec::new(201)
        })
        .await;
    counters(&w, card, date(2026, 4, 1), dec!(100), dec!(100), dec!(0)).await;
    w.add_package(w.package(PackageOwner::Card(card), Some(dec!(120)), dec!(100)))
        .await;

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::TrafficExhausted))
    );
    assert_eq!(w.calls(card), (1, 0));
    let log = w.log(card).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].entry.trigger, "carddata");
    let cached = w.cache.get(card).await.expect("cache").expect("cached");
    assert_eq!(
        cached,
        c.identity(None),
        "the cache holds the identity only"
    );
}

/// A downward carrier correction counts 0, rebases, and logs a warning.
#[tokio::test]
#[traced_test]
async fn downward_correction_warns_and_rebases() {
    let w = World::new().await;
    let card = w
        .card(CardSpec {
            month_total_mb: dec!(120),
            ..CardSpec::new(202)
        })
        .await;
    counters(&w, card, date(2026, 4, 1), dec!(150), dec!(150), dec!(0)).await;
    w.add_package(w.package(PackageOwner::Card(card), None, dec!(0)))
        .await;

    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(c.usage.current_month_usage_mb, dec!(150), "nothing counted");
    assert_eq!(c.usage.last_gateway_total_mb, dec!(120), "rebased");
    assert!(records(&w, card).await.is_empty());
    logs_assert(common::line_with(&["流量下调", "card_id=202"]));
}

/// Each card with 400 MB counted this month (the carrier's baseline) against a 1,000 MB
/// package, then polled once for usage.
async fn polled_from_400_of_1000(w: &World, cards: &[CardId]) {
    for card in cards {
        counters(w, *card, date(2026, 4, 1), dec!(400), dec!(400), dec!(0)).await;
        w.add_package(w.package(PackageOwner::Card(*card), Some(dec!(1000)), dec!(400)))
            .await;
        assert_eq!(w.handle(TaskType::Carddata, *card).await, Outcome::Success);
    }
}

/// Usage crossing 90 % of the allowance makes the card's next usage poll decisive: it is
/// rescheduled at its interval in the shard queue and picked in `polling:decisive:carddata` at
/// the same time; far from the limit it is not; once stopped, its usage decides nothing more
/// and its packages do (a new one resumes it).
#[tokio::test]
async fn a_card_near_its_limit_gets_a_decisive_next_usage_poll() {
    let w = World::new().await;
    let spec = |id, total| CardSpec {
        month_total_mb: total,
        ..CardSpec::new(id)
    };
    let near = w.card(spec(210, dec!(910))).await;
    let far = w.card(spec(211, dec!(500))).await;
    let over = w.card(spec(212, dec!(1010))).await;
    polled_from_400_of_1000(&w, &[near, far, over]).await;

    let picks = w.decisive_picks(TaskType::Carddata).await;
    assert_eq!(picks.len(), 1, "{picks:?}");
    assert_eq!(picks[0].0, near);
    assert_score(
        Some(picks[0].1),
        w.at(CARDDATA_SECS),
        "the pick's time is the next poll's",
    );
    assert_score(
        w.score(near, TaskType::Carddata).await,
        w.at(CARDDATA_SECS),
        "and its queue score",
    );

    let stopped = w.db_card(over).await;
    assert_eq!(stopped.stop_reason, Some(StopReason::TrafficExhausted));
    assert_eq!(w.handle(TaskType::Package, over).await, Outcome::Success);
    let picks = w.decisive_picks(TaskType::Package).await;
    assert_eq!(picks.iter().map(|p| p.0).collect::<Vec<_>>(), vec![over]);
}

/// A card far from 90 % whose usage rises fast: it has less left than its last poll counted, so
/// at that pace its next poll will likely find it exhausted: decisive.
#[tokio::test]
async fn a_card_using_faster_than_it_has_left_gets_a_decisive_next_usage_poll() {
    let w = World::new().await;
    let steady = w
        .card(CardSpec {
            month_total_mb: dec!(500),
            ..CardSpec::new(220)
        })
        .await;
    let racing = w
        .card(CardSpec {
            month_total_mb: dec!(750),
            ..CardSpec::new(221)
        })
        .await;
    polled_from_400_of_1000(&w, &[steady, racing]).await;
    // steady: 100 counted, 500 left; racing: 350 counted, 250 left (75 % used).
    let picks = w.decisive_picks(TaskType::Carddata).await;
    assert_eq!(picks.iter().map(|p| p.0).collect::<Vec<_>>(), vec![racing]);
}
