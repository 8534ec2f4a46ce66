//! Stops and starts the carrier refuses, end to end through the real handlers, stores
//! (PostgreSQL), queues (Redis), stop/resume and a platform adapter on `gateway-sim`
//! (`docs/rules.md`, "Stop / resume", refusals):
//!
//! * a refusal the adapter does not understand, for a card the carrier already has as wanted,
//!   is settled by one status read: one call, one `ok` row, and nothing asked again;
//! * a change refused with answers not understood three times in a row is asked again only an
//!   hour after the last;
//! * a change refused under the carrier's change lock comes back after the lock's window, not
//!   at the retry interval.

mod common;

use chrono::Duration;
use common::{CardSpec, RETRY_SECS, World, assert_score, iccid};
use domain::{
    CardId, CarrierProtocol, GatewayOutcome, NetworkStatus, PackageOwner, PackageStatus,
    StopReason, TaskType,
};
use gateway::CallKind;
use gateway_sim::{Script, ScriptStep, SimCardPatch};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use stop_resume::StopResumeError;
use task_handlers::Outcome;

fn patch(w: &World, card: CardId, patch: SimCardPatch) {
    w.sim
        .state()
        .patch_card(&iccid(card.get()), patch)
        .expect("patch")
        .expect("sim card");
}

/// A card with one package of 100 MB that the carrier reports used up: its next usage poll
/// decides to stop it for `traffic_exhausted`.
async fn exhausted_card(w: &World, id: i64) -> CardId {
    let card = w.card(CardSpec::new(id)).await;
    let mut pkg = w.package(PackageOwner::Card(card), Some(dec!(100)), dec!(0));
    pkg.external_id = Some("P-1".into());
    w.add_package(pkg).await;
    patch(
        w,
        card,
        SimCardPatch {
            month_total_mb: Some(dec!(100)),
            growth_mb_per_query: Some(Decimal::ZERO),
            ..Default::default()
        },
    );
    card
}

/// The next `n` stop requests are refused with HTTP 400: a refusal the 1NCE adapter reports as
/// a carrier refusal it cannot read more into (`Carrier{400}`, not retryable).
fn refuse_stops(w: &World, n: usize) {
    w.sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Status(400); n],
        call: Some(CallKind::Stop),
    });
}

fn advance(w: &World, secs: i64) {
    w.clock.advance(Duration::seconds(secs));
}

#[tokio::test]
async fn a_refused_stop_of_a_card_the_carrier_already_stopped_is_recorded_once_and_not_asked_again()
{
    let (w, _) = World::for_carrier(CarrierProtocol::OneNce, |_| {}).await;
    let card = exhausted_card(&w, 301).await;
    // The carrier already has the card stopped, and refuses to stop it again with an answer
    // nobody documented.
    patch(
        &w,
        card,
        SimCardPatch {
            network_status: Some(NetworkStatus::Stopped),
            ..Default::default()
        },
    );
    refuse_stops(&w, 10);

    // 1NCE answers the status on its SIM call, which the sim counts as `realname` (the usage
    // poll makes none).
    let reads = || {
        w.sim
            .state()
            .stats()
            .by_call
            .get("realname")
            .copied()
            .unwrap_or(0)
    };
    // The adapter's token is fetched on its first call (also counted as `realname`): fetched
    // before counting.
    w.deps
        .gateway
        .usage(domain::CarrierId(1), &iccid(card.get()))
        .await
        .expect("usage answers");
    let before = reads();
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    assert_eq!(w.calls(card), (1, 0), "one stop call");
    assert_eq!(reads() - before, 1, "one status read");
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::TrafficExhausted)),
        "the database follows the status the carrier was read to have"
    );
    let log = w.log(card).await;
    assert_eq!(log.len(), 1, "one row: {log:?}");
    assert_eq!(log[0].entry.gateway_outcome, GatewayOutcome::Ok);
    assert_eq!(log[0].entry.trigger, "carddata:already_at_carrier");
    assert_eq!(log[0].entry.to_status, NetworkStatus::Stopped);

    // Several retry intervals later: nothing more is asked.
    for _ in 0..5 {
        advance(&w, RETRY_SECS);
        assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    }
    assert_eq!(w.calls(card), (1, 0), "no further stop call");
    assert_eq!(w.log(card).await.len(), 1, "no further row");
}

#[tokio::test]
async fn a_stop_refused_three_times_with_answers_not_understood_is_backed_off_an_hour() {
    let (w, _) = World::for_carrier(CarrierProtocol::OneNce, |_| {}).await;
    let card = exhausted_card(&w, 302).await;
    // The carrier has the card online and refuses every stop with an undocumented answer.
    refuse_stops(&w, 20);

    for n in 1..=2 {
        assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Failure);
        assert_eq!(w.calls(card), (n, 0));
        assert_score(
            w.score(card, TaskType::Carddata).await,
            w.at(RETRY_SECS),
            "after a refusal: the retry interval",
        );
        advance(&w, RETRY_SECS);
    }
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Failure);
    assert_eq!(w.calls(card), (3, 0));
    assert_score(
        w.score(card, TaskType::Carddata).await,
        w.at(3600),
        "after the third refusal in a row: an hour",
    );

    // Asked again before the hour is out (a manual poll, another task type): no call, and the
    // card comes back when the hour ends.
    advance(&w, RETRY_SECS);
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Failure);
    assert_eq!(w.handle(TaskType::Package, card).await, Outcome::Failure);
    assert_eq!(w.calls(card), (3, 0), "not asked a fourth time");
    let score = w.score(card, TaskType::Carddata).await.expect("queued");
    assert!(
        score > w.at(3500) && score <= w.at(3600),
        "backed off to the end of the hour: {score} vs now {}",
        w.at(0)
    );

    let log = w.log(card).await;
    assert_eq!(log.len(), 3, "one row per call: {log:?}");
    for row in &log {
        assert_eq!(row.entry.gateway_outcome, GatewayOutcome::Failed);
        assert_eq!(row.entry.trigger, "carddata:refused");
    }
    let c = w.db_card(card).await;
    assert_eq!(
        c.facts.network_status,
        NetworkStatus::Online,
        "the carrier still has it online"
    );

    // An operator is never held back: the stop is asked (and refused) once more.
    let err = w
        .deps
        .stop_resume
        .stop_by_operator(card)
        .await
        .expect_err("refused");
    assert!(
        matches!(err, StopResumeError::Gateway { call: "stop", .. }),
        "{err:?}"
    );
    assert_eq!(w.calls(card), (4, 0));
}

#[tokio::test]
async fn a_change_refused_under_the_change_lock_comes_back_after_the_lock_window() {
    let (w, _) = World::for_carrier(CarrierProtocol::OneLink, |_| {}).await;
    let card = exhausted_card(&w, 303).await;
    assert_eq!(w.handle(TaskType::Carddata, card).await, Outcome::Success);
    assert_eq!(
        w.db_card(card).await.facts.network_status,
        NetworkStatus::Stopped
    );

    // Renewed at the carrier at once: the resume falls within OneLink's change lock.
    let renewal = |id: &str, status, used| domain::CarrierPackage {
        external_id: id.into(),
        status,
        used_mb: used,
        limit_mb: Some(dec!(100)),
        activated_at: Some(w.now() - Duration::days(1)),
        expires_at: Some(w.now() + Duration::days(29)),
    };
    patch(
        &w,
        card,
        SimCardPatch {
            packages: Some(vec![
                renewal("P-1", PackageStatus::Expired, dec!(100)),
                renewal("P-2", PackageStatus::Active, dec!(0)),
            ]),
            ..Default::default()
        },
    );
    assert_eq!(w.handle(TaskType::Package, card).await, Outcome::Failure);
    assert_eq!(w.calls(card), (1, 1), "one start call, refused");
    assert_eq!(
        w.db_card(card).await.facts.network_status,
        NetworkStatus::Stopped
    );
    assert_score(
        w.score(card, TaskType::Package).await,
        w.at(300),
        "the lock's window (300 s), not the retry interval",
    );
}
