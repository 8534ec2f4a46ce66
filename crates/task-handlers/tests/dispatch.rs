//! Batched dispatch end to end: usage polls of cards of a OneLink carrier (100 cards a batch
//! call) run at once through the real handlers, stores, queues and the adapter on gateway-sim.
//! Each card's answer goes through its own exact path; the carrier sees one call per batch. A
//! failed batch writes nothing and retries every card of it; a card left out of the answer is
//! retried, never marked; two polls of one card in a batch count its usage once.

mod common;

use common::{CARDDATA_SECS, CardSpec, RETRY_SECS, World, assert_score, iccid};
use domain::{CardId, CarrierProtocol, PackageOwner, TaskType};
use gateway::CallKind;
use gateway_sim::{Malformed, Script, ScriptStep, SimCardSpec};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use task_handlers::Outcome;

/// A world of `n` cards (ids 1..=n) on OneLink, card `k` at `k` MB this month, fixed.
async fn fleet(n: i64) -> (World, Vec<CardId>) {
    let (w, _router) = World::for_carrier(CarrierProtocol::OneLink, |_| {}).await;
    let mut cards = Vec::new();
    for id in 1..=n {
        cards.push(w.card(CardSpec::new(id)).await);
    }
    let specs = (1..=n)
        .map(|id| SimCardSpec {
            month_total_mb: Decimal::from(id),
            growth_mb_per_query: Some(Decimal::ZERO),
            ..SimCardSpec::new(iccid(id))
        })
        .collect();
    w.sim.state().upsert_cards(specs).expect("sim cards");
    (w, cards)
}

/// Every card's poll of `task` at once, as a node's pool runs them; outcomes in card order.
async fn at_once(w: &World, task: TaskType, cards: &[CardId]) -> Vec<Outcome> {
    let handler = w.registry.get(task).expect("handler registered").clone();
    let mut polls = tokio::task::JoinSet::new();
    for (i, card) in cards.iter().enumerate() {
        let (handler, card) = (handler.clone(), *card);
        polls.spawn(async move { (i, handler.handle(card).await) });
    }
    let mut out = vec![Outcome::Skipped; cards.len()];
    while let Some(joined) = polls.join_next().await {
        let (i, outcome) = joined.expect("poll task");
        out[i] = outcome;
    }
    out
}

fn usage_calls(w: &World) -> u64 {
    w.sim
        .state()
        .stats()
        .by_call
        .get(CallKind::Usage.as_str())
        .copied()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_usage_polls_share_batch_calls_and_each_card_gets_its_own_answer() {
    // As many as the world's cluster-wide pool admits at once (100 slots).
    let (w, cards) = fleet(100).await;

    let outcomes = at_once(&w, TaskType::Carddata, &cards).await;

    assert!(
        outcomes.iter().all(|o| *o == Outcome::Success),
        "{outcomes:?}"
    );
    let calls = usage_calls(&w);
    assert!(
        (1..=3).contains(&calls),
        "100 cards, 100 a call: one call when all gather within the linger, never one per card; got {calls}"
    );
    for card in &cards {
        let c = w.db_card(*card).await;
        assert_eq!(
            c.usage.current_month_usage_mb,
            Decimal::from(card.get()),
            "card {card:?} written from its own answer"
        );
        assert_score(
            w.score(*card, TaskType::Carddata).await,
            w.at(CARDDATA_SECS),
            "rescheduled at the interval",
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_batch_call_writes_nothing_and_retries_every_card_of_it() {
    let (w, cards) = fleet(30).await;
    w.sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Status(503); 8],
        call: Some(CallKind::Usage),
    });

    let outcomes = at_once(&w, TaskType::Carddata, &cards).await;

    assert!(
        outcomes.iter().all(|o| *o == Outcome::Failure),
        "{outcomes:?}"
    );
    for card in &cards {
        let c = w.db_card(*card).await;
        assert_eq!(c.usage.current_month_usage_mb, dec!(0), "nothing written");
        assert_score(
            w.score(*card, TaskType::Carddata).await,
            w.at(RETRY_SECS),
            "retried at the retry interval",
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_card_missing_from_a_partial_answer_is_retried_never_marked() {
    let (w, cards) = fleet(3).await;
    w.sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Malformed(Malformed::DropLast)],
        call: Some(CallKind::Usage),
    });

    let outcomes = at_once(&w, TaskType::Carddata, &cards).await;

    let failed: Vec<CardId> = cards
        .iter()
        .zip(&outcomes)
        .filter(|(_, o)| **o == Outcome::Failure)
        .map(|(c, _)| *c)
        .collect();
    if usage_calls(&w) == 1 {
        assert_eq!(failed.len(), 1, "the one card left out: {outcomes:?}");
    }
    for (card, outcome) in cards.iter().zip(&outcomes) {
        let c = w.db_card(*card).await;
        let score = w.score(*card, TaskType::Carddata).await;
        if *outcome == Outcome::Failure {
            assert_eq!(c.usage.current_month_usage_mb, dec!(0), "never marked");
            assert_score(score, w.at(RETRY_SECS), "retried");
        } else {
            assert_eq!(*outcome, Outcome::Success);
            assert_eq!(c.usage.current_month_usage_mb, Decimal::from(card.get()));
            assert_score(score, w.at(CARDDATA_SECS), "polled");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_polls_of_one_card_in_a_batch_count_its_usage_once() {
    let (w, cards) = fleet(20).await;
    let card = cards[4];
    w.add_package(w.package(PackageOwner::Card(card), Some(dec!(1024)), dec!(0)))
        .await;
    let mut asked = cards.clone();
    asked.push(card);

    let outcomes = at_once(&w, TaskType::Carddata, &asked).await;

    assert!(
        outcomes.iter().all(|o| *o == Outcome::Success),
        "{outcomes:?}"
    );
    let c = w.db_card(card).await;
    assert_eq!(c.usage.current_month_usage_mb, dec!(5));
    assert_eq!(c.data_usage_mb, dec!(5), "counted once");
    let packages = w.packages_of(PackageOwner::Card(card)).await;
    assert_eq!(packages[0].spec.used_mb, dec!(5), "deducted once");
}
