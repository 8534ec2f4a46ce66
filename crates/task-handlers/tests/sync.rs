//! The carrier record sync against gateway-sim's 1NCE and Control Center: listed cards' real-name
//! polls answered without a per-card call, a differing status polled through the exact path,
//! the watermark moved only after a round's last page, a failed page read again.

mod common;

use common::{CardSpec, REALNAME_SECS, World, iccid};
use domain::{
    CardId, CarrierAccountInput, CarrierId, CarrierProtocol, NetworkStatus, RealNameStatus,
    TaskType,
};
use gateway_sim::{FaultsPatch, SimCardPatch, SimCardSpec};
use task_handlers::CarrierSync;

const CARRIER: CarrierId = CarrierId(1);

/// The world's carrier as a `tb_carrier` row (the sync lists the carriers of the store).
async fn register_carrier(w: &World, protocol: CarrierProtocol) {
    let account = common::account_of(&w.sim, protocol);
    w.stores
        .carriers
        .insert(&CarrierAccountInput {
            carrier_id: account.carrier_id,
            name: account.name,
            protocol,
            base_url: account.base_url,
            credentials: Some(account.credentials),
            limits: account.limits,
            enabled: true,
        })
        .await
        .expect("carrier row");
}

fn sync(w: &World, pages_per_run: u32) -> CarrierSync {
    CarrierSync::new(
        w.deps.polling(),
        w.stores.carriers.clone(),
        w.stores.syncs.clone(),
        pages_per_run,
    )
}

/// Requests the simulator received (the token request and every listing page included).
fn requests(w: &World) -> u64 {
    w.sim.state().stats().requests
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1nce_listing_answers_unchanged_real_name_polls_without_a_call() {
    let (w, _router) = World::for_carrier(CarrierProtocol::OneNce, |_| {}).await;
    register_carrier(&w, CarrierProtocol::OneNce).await;
    // 250 verified cards of ours (pages of 100: three pages), one more not verified in our
    // records though the platform lists it, and a SIM the platform has that is not ours.
    for id in 1..=250 {
        w.card(CardSpec::new(id)).await;
    }
    let pending = w.card(CardSpec::new(251).not_real_named()).await;
    w.sim
        .state()
        .upsert_cards(vec![SimCardSpec::new(iccid(999))])
        .expect("sim card");
    let asked_before = requests(&w);
    let job = sync(&w, 2);

    // The first run reads two pages: the round is not over, the watermark has not moved.
    let first = job
        .sync_carrier(CARRIER)
        .await
        .expect("runs")
        .expect("1NCE lists");
    assert_eq!(first.pages, 2);
    assert_eq!(first.rounds_completed, 0);
    let state = w.stores.syncs.sync_state(CARRIER).await.expect("state");
    assert_eq!(
        state.watermark, None,
        "no watermark before the round's last page"
    );
    let round = state.round.expect("a round in progress");
    assert_eq!(round.next_page, 3);

    // A failed page changes nothing: the next run reads it again.
    w.sim
        .state()
        .set_faults(FaultsPatch {
            error_rate: Some(1.0),
            ..FaultsPatch::default()
        })
        .expect("faults");
    job.sync_carrier(CARRIER).await.expect_err("the page fails");
    assert_eq!(
        w.stores.syncs.sync_state(CARRIER).await.expect("state"),
        state,
        "a failed page moves nothing"
    );
    w.sim
        .state()
        .set_faults(FaultsPatch {
            error_rate: Some(0.0),
            ..FaultsPatch::default()
        })
        .expect("faults");

    let second = job
        .sync_carrier(CARRIER)
        .await
        .expect("runs")
        .expect("1NCE lists");
    assert_eq!(second.pages, 1);
    assert_eq!(second.rounds_completed, 1);
    let done = w.stores.syncs.sync_state(CARRIER).await.expect("state");
    assert_eq!(
        done.watermark,
        Some(round.started_at),
        "the watermark is the round's start"
    );
    assert_eq!(done.round, None);
    assert_eq!(done.rounds, 1);

    let effects = first.effects;
    let total_known = effects.known + second.effects.known;
    assert_eq!(total_known, 251);
    assert_eq!(
        effects.unknown + second.effects.unknown,
        1,
        "the SIM that is not ours"
    );
    assert_eq!(effects.postponed + second.effects.postponed, 250);
    assert_eq!(effects.polled + second.effects.polled, 1);
    // Three pages, the failed attempt and the token: no per-card query.
    let asked = requests(&w) - asked_before;
    assert!(asked <= 5, "{asked} requests for 251 cards");

    // Every unchanged card's real-name poll is one interval away; nothing else moved.
    for id in [1, 100, 101, 250] {
        let card = CardId(id);
        assert_eq!(
            w.score(card, TaskType::Realname).await,
            Some(w.at(REALNAME_SECS)),
            "card {id}"
        );
        assert_eq!(
            w.score(card, TaskType::Carddata).await,
            Some(w.at(0)),
            "card {id}: only the real-name poll is answered"
        );
    }
    // The differing card is left due and asked for through the manual list: its real-name
    // poll writes the change through the exact path.
    assert_eq!(w.score(pending, TaskType::Realname).await, Some(w.at(0)));
    assert_eq!(
        w.queue
            .take_manual(TaskType::Realname, 10)
            .await
            .expect("manual"),
        vec![pending]
    );
    w.handle(TaskType::Realname, pending).await;
    assert_eq!(
        w.db_card(pending).await.facts.real_name_status,
        RealNameStatus::Verified
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_center_listing_reports_a_status_it_does_not_write() {
    let (w, _router) = World::for_carrier(CarrierProtocol::ControlCenter, |_| {}).await;
    register_carrier(&w, CarrierProtocol::ControlCenter).await;
    for id in 1..=60 {
        w.card(CardSpec::new(id)).await;
    }
    // Deactivated on the carrier's portal, not by us.
    w.sim
        .state()
        .patch_card(
            &iccid(7),
            SimCardPatch {
                network_status: Some(NetworkStatus::Stopped),
                ..SimCardPatch::default()
            },
        )
        .expect("patched");
    let job = sync(&w, 10);
    let report = job
        .sync_carrier(CARRIER)
        .await
        .expect("runs")
        .expect("lists");
    assert_eq!(report.rounds_completed, 1, "60 devices: two pages of 50");
    assert_eq!(report.pages, 2);
    assert_eq!(report.effects.known, 60);
    assert_eq!(report.effects.status_differs, 1);
    assert_eq!(
        report.effects.postponed, 0,
        "the record says nothing of real-name"
    );
    assert_eq!(report.effects.polled, 0);
    assert_eq!(
        w.db_card(CardId(7)).await.facts.network_status,
        NetworkStatus::Online,
        "the card's status is the stop/start path's"
    );
    let state = w.stores.syncs.sync_state(CARRIER).await.expect("state");
    assert_eq!(state.rounds, 1);
    assert!(state.watermark.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_without_a_listing_is_left_alone() {
    let (w, _router) = World::for_carrier(CarrierProtocol::OneLink, |_| {}).await;
    register_carrier(&w, CarrierProtocol::OneLink).await;
    w.card(CardSpec::new(1)).await;
    let before = requests(&w);
    let reports = sync(&w, 10).run_once().await.expect("runs");
    assert!(reports.is_empty(), "{reports:?}");
    assert_eq!(requests(&w), before, "no request");
    assert_eq!(
        w.stores.syncs.sync_state(CARRIER).await.expect("state"),
        domain::SyncState::new()
    );
}
