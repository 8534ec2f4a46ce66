//! The real-name poll: every scenario of the seed, end to end.

mod common;

use common::{CardSpec, REALNAME_SECS, RETRY_SECS, World, assert_score, iccid};
use domain::{NetworkStatus, PackageOwner, PackageStatus, RealNameStatus, StopReason, TaskType};
use gateway::CallKind;
use gateway_sim::{Script, ScriptStep, SimCardPatch};
use rust_decimal_macros::dec;
use task_handlers::{Outcome, TaskHandler};
use tracing_test::traced_test;

fn carrier_verifies(w: &World, card: i64) {
    let patch = SimCardPatch {
        real_name_status: Some(RealNameStatus::Verified),
        ..Default::default()
    };
    w.sim
        .state()
        .patch_card(&iccid(card), patch)
        .expect("patch")
        .expect("sim card");
}

/// Seed: cardID=100, real_name_status=0, stopped for not_realname; the carrier reports the
/// real-name done -> written, activation, evaluation, resumed (network 1, reason '').
#[tokio::test]
#[traced_test]
async fn card_100_real_named_0_to_1_is_resumed() {
    let w = World::new().await;
    let card = w
        .card(
            CardSpec::new(100)
                .not_real_named()
                .stopped(StopReason::NotRealname),
        )
        .await;
    w.add_package(w.package(PackageOwner::Card(card), Some(dec!(1024)), dec!(0)))
        .await;
    carrier_verifies(&w, 100);

    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);

    let c = w.db_card(card).await;
    assert_eq!(c.facts.real_name_status, RealNameStatus::Verified);
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(w.calls(card), (0, 1), "one start, no stop");
    let log = w.log(card).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].entry.trigger, "realname");
    logs_assert(common::line_with(&[
        "卡实名状态变更: 0→1，触发激活任务和复机评估",
        "card_id=100",
    ]));
    assert_score(
        w.score(card, TaskType::Realname).await,
        w.at(REALNAME_SECS),
        "rescheduled at the interval",
    );
    // The cache holds the card's identity only: nothing a poll changes.
    let cached = w.cache.get(card).await.expect("cache").expect("cached");
    assert_eq!(cached, c.identity(None));
}

/// Seed: cardID=200, real-named, the carrier still says real-named -> no write, no activation,
/// no evaluation, rescheduled at the normal interval.
#[tokio::test]
async fn card_200_unchanged_writes_nothing() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(200)).await;
    // A package waiting for real-name must stay pending; no valid package, so an evaluation
    // would stop the card (no_package): neither may happen.
    let mut waiting = w.package(PackageOwner::Card(card), Some(dec!(100)), dec!(0));
    waiting.status = PackageStatus::Pending;
    waiting.activate_on_realname = true;
    w.add_package(waiting).await;
    let before = w.db_card(card).await;

    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);

    let after = w.db_card(card).await;
    assert_eq!(after.updated_at, before.updated_at, "no write");
    assert_eq!(after.facts.real_name_status, RealNameStatus::Verified);
    let pkgs = w.packages_of(PackageOwner::Card(card)).await;
    assert_eq!(pkgs[0].spec.status, PackageStatus::Pending, "no activation");
    assert_eq!(w.calls(card), (0, 0), "no evaluation");
    assert_eq!(after.facts.network_status, NetworkStatus::Online);
    assert!(w.log(card).await.is_empty());
    assert_score(
        w.score(card, TaskType::Realname).await,
        w.at(REALNAME_SECS),
        "normal interval",
    );
}

/// First real-name activation (`docs/rules.md`, "Package activation"): the device's package waiting
/// for real-name becomes active inline, so the evaluation that follows resumes the card.
#[tokio::test]
async fn first_real_name_activates_the_waiting_package_and_resumes() {
    let w = World::new().await;
    let device = w.device("D-RN").await;
    let card = w
        .card(
            CardSpec::new(101)
                .not_real_named()
                .stopped(StopReason::NotRealname)
                .on(device),
        )
        .await;
    let mut waiting = w.package(PackageOwner::Device(device), Some(dec!(500)), dec!(0));
    waiting.status = PackageStatus::Pending;
    waiting.activate_on_realname = true;
    waiting.activated_at = None;
    waiting.expires_at = None;
    w.add_package(waiting).await;
    carrier_verifies(&w, 101);

    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);

    let pkgs = w.packages_of(PackageOwner::Device(device)).await;
    assert_eq!(pkgs[0].spec.status, PackageStatus::Active);
    assert_eq!(pkgs[0].spec.activated_at, Some(w.now()));
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(w.calls(card), (0, 1));
}

/// The evaluation after 0 -> 1 failed (carrier refused the start): the card is rescheduled at
/// the retry interval, and the next poll, although the status is unchanged, evaluates again.
#[tokio::test]
async fn failed_resume_after_real_name_is_retried() {
    let w = World::new().await;
    let card = w
        .card(
            CardSpec::new(102)
                .not_real_named()
                .stopped(StopReason::NotRealname),
        )
        .await;
    w.add_package(w.package(PackageOwner::Card(card), None, dec!(0)))
        .await;
    carrier_verifies(&w, 102);
    w.sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Status(503); 3],
        call: Some(CallKind::Start),
    });

    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Failure);
    let c = w.db_card(card).await;
    assert_eq!(
        c.facts.real_name_status,
        RealNameStatus::Verified,
        "the status write stands"
    );
    assert_eq!(c.facts.network_status, NetworkStatus::Stopped);
    assert_score(
        w.score(card, TaskType::Realname).await,
        w.at(RETRY_SECS),
        "retry interval",
    );

    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    assert_eq!(
        w.calls(card),
        (0, 4),
        "three refused tries, then one applied"
    );
}

/// A real-name query failure writes nothing and comes back at the retry interval.
#[tokio::test]
#[traced_test]
async fn query_failure_retries() {
    let w = World::new().await;
    let card = w.card(CardSpec::new(103).not_real_named()).await;
    w.sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Status(503)],
        call: Some(CallKind::Realname),
    });
    let before = w.db_card(card).await;

    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Failure);
    assert_eq!(w.db_card(card).await.updated_at, before.updated_at);
    logs_assert(common::line_with(&["实名查询失败", "card_id=103"]));
    assert_score(
        w.score(card, TaskType::Realname).await,
        w.at(RETRY_SECS),
        "retry interval",
    );
    let stats = w.counters.read(TaskType::Realname).await.expect("stats");
    assert_eq!((stats.success, stats.failure), (0, 1));
}

/// A process killed between the real-name write and the alignment after it (here: the write
/// commits and its answer is lost) still leaves the card in the queues its new config
/// schedules. The next poll finds the status already written and changes nothing, so only the
/// entries added before the write can be there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_write_answer_is_lost_leaves_the_card_in_its_new_queues() {
    let w = World::new().await;
    // Cards not yet real-named are not protect-polled; real-named ones match "all cards".
    w.stores
        .configs
        .insert(&domain::PollingConfigInput {
            name: "not real-named".into(),
            priority: 5,
            card_condition: Some(domain::CardCondition::NotRealname),
            intervals: domain::Intervals {
                protect_interval_secs: None,
                ..common::config_input().intervals
            },
            ..common::config_input()
        })
        .await
        .expect("config inserts");
    w.configs.refresh().await.expect("configs load");
    let card = w.card(CardSpec::new(104).not_real_named()).await;
    w.deps
        .lifecycle
        .on_card_facts_changed(&w.db_card(card).await)
        .await
        .expect("aligned with the not real-named config");
    assert_eq!(w.score(card, TaskType::Protect).await, None);
    carrier_verifies(&w, 104);

    // The store commits the write, then the process "dies": the handler gets no answer.
    let real = w.stores.cards.clone();
    let handle = tokio::runtime::Handle::current();
    let mut cards = domain::store::MockCardStore::new();
    cards.expect_set_real_name().returning(move |id, status| {
        tokio::task::block_in_place(|| handle.block_on(real.set_real_name(id, status)))?;
        Err(domain::StoreError::Database(
            "connection closed after the commit".into(),
        ))
    });
    let handler = task_handlers::PollingRealnameHandler::new(task_handlers::PollingDeps {
        cards: std::sync::Arc::new(cards),
        ..w.deps.polling()
    });
    assert_eq!(handler.handle(card).await, Outcome::Failure);
    assert_eq!(
        w.db_card(card).await.facts.real_name_status,
        RealNameStatus::Verified
    );
    assert_score(
        w.score(card, TaskType::Protect).await,
        w.at(0),
        "queued for protect, due now, before the status was written",
    );

    // The next poll sees nothing to change and keeps the entry.
    assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);
    assert!(w.score(card, TaskType::Protect).await.is_some());
}

/// A card stopped for want of real-name waits on exactly this fact: while the carrier still
/// reports it unverified, its next real-name poll is decisive (picked in
/// `polling:decisive:realname` at its interval); once verified and resumed it is not.
#[tokio::test]
async fn a_card_waiting_on_real_name_gets_a_decisive_next_poll() {
    let w = World::new().await;
    let spec = |id| {
        CardSpec::new(id)
            .not_real_named()
            .stopped(StopReason::NotRealname)
    };
    let waiting = w.card(spec(110)).await;
    let verified = w.card(spec(111)).await;
    for card in [waiting, verified] {
        w.add_package(w.package(PackageOwner::Card(card), Some(dec!(1024)), dec!(0)))
            .await;
    }
    carrier_verifies(&w, 111);
    for card in [waiting, verified] {
        assert_eq!(w.handle(TaskType::Realname, card).await, Outcome::Success);
    }
    assert_eq!(w.db_card(verified).await.stop_reason, None, "resumed");

    let picks = w.decisive_picks(TaskType::Realname).await;
    assert_eq!(picks.iter().map(|p| p.0).collect::<Vec<_>>(), vec![waiting]);
    assert_score(
        Some(picks[0].1),
        w.at(REALNAME_SECS),
        "due at the next poll",
    );
}
