//! The stop path end to end: real PostgreSQL and Redis (test-support), the real stores, the HTTP
//! gateway client against an in-process gateway-sim.

mod common;

use common::World;
use domain::{GatewayOutcome, NetworkStatus, RealNameStatus, StopReason};
use gateway::CallKind;
use gateway_sim::{FaultsPatch, Script, ScriptStep};
use stop_resume::{Action, NothingWhy, StopResumeError, StopResumeSettings, Trigger};

#[tokio::test]
async fn stop_path_end_to_end() {
    let w = World::new().await;
    let card = w.card("89001", None).await;

    let d = w
        .service
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::Stopped {
            reason: StopReason::NoPackage
        }
    );
    assert_eq!(d.evidence.valid_packages, 0);

    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Stopped, Some(StopReason::NoPackage))
    );
    let log = w.log(card).await;
    assert_eq!(log.len(), 1);
    let row = &log[0].entry;
    assert_eq!(
        (row.from_status, row.to_status),
        (NetworkStatus::Online, NetworkStatus::Stopped)
    );
    assert_eq!(row.stop_reason, Some(StopReason::NoPackage));
    assert_eq!(row.trigger, "carddata");
    assert_eq!(row.gateway_outcome, GatewayOutcome::Ok);
    assert_eq!(w.calls("89001"), (1, 0));
    assert_eq!(
        w.sim.state().card("89001").map(|v| v.network_status),
        Some(NetworkStatus::Stopped)
    );

    // Evaluated again: nothing to do, no call, no row.
    let again = w
        .service
        .evaluate_and_act(card, Trigger::Package)
        .await
        .expect("evaluates");
    assert_eq!(
        again.action,
        Action::Nothing {
            why: NothingWhy::AlreadyStopped
        }
    );
    assert_eq!(w.calls("89001"), (1, 0));
    assert_eq!(w.log(card).await.len(), 1);
}

#[tokio::test]
async fn gateway_failure_leaves_the_card_unchanged() {
    let w = World::new().await;
    let card = w.card("89002", None).await;
    let steps = vec![ScriptStep::Status(503); 3];
    w.sim.state().set_script(Script {
        fail_next: steps,
        call: Some(CallKind::Stop),
    });

    let err = w
        .service
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect_err("gateway fails");
    assert!(
        matches!(err, StopResumeError::Gateway { call: "stop", .. }),
        "typed gateway error, got {err:?}"
    );
    let c = w.db_card(card).await;
    assert_eq!(
        (c.facts.network_status, c.stop_reason),
        (NetworkStatus::Online, None)
    );
    // The intent is closed `failed`: the attempt is in the audit, the card is not changed.
    let log = w.log(card).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].entry.gateway_outcome, GatewayOutcome::Failed);
    assert_eq!(w.calls("89002"), (3, 0), "three tries, no more");

    // The caller reschedules; the next evaluation succeeds with one more call.
    let d = w
        .service
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::Stopped {
            reason: StopReason::NoPackage
        }
    );
    assert_eq!(w.calls("89002"), (4, 0));
    let outcomes: Vec<_> = w
        .log(card)
        .await
        .iter()
        .map(|l| l.entry.gateway_outcome)
        .collect();
    assert_eq!(outcomes, vec![GatewayOutcome::Failed, GatewayOutcome::Ok]);
}

#[tokio::test]
async fn twenty_concurrent_evaluations_call_the_gateway_once() {
    let w = World::new().await;
    let card = w.card("89003", None).await;
    // Slow carrier: the evaluations really overlap.
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(100),
            ..FaultsPatch::default()
        })
        .expect("faults");
    let other = w.another_service().await;

    let runs = (0..20).map(|i| {
        let svc = if i % 2 == 0 {
            w.service.clone()
        } else {
            other.clone()
        };
        async move { svc.evaluate_and_act(card, Trigger::Carddata).await }
    });
    let results = futures::future::join_all(runs).await;
    let mut stopped = 0;
    for r in results {
        match r.expect("every evaluation completes").action {
            Action::Stopped { reason } => {
                assert_eq!(reason, StopReason::NoPackage);
                stopped += 1;
            }
            Action::Nothing { why } => assert_eq!(why, NothingWhy::AlreadyStopped),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(stopped, 1);
    assert_eq!(w.calls("89003"), (1, 0), "exactly one gateway stop");
    assert_eq!(w.log(card).await.len(), 1, "exactly one audit row");
}

/// A carrier slower than the card lock's TTL: the holder renews the lock while it waits, so a
/// second evaluation cannot take the lock, see the card still online and stop it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_carrier_slower_than_the_lock_ttl_still_stops_once() {
    let w = World::new().await;
    let card = w.card("89004", None).await;
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(1_000),
            ..FaultsPatch::default()
        })
        .expect("faults");
    let settings = StopResumeSettings {
        lock_ttl: std::time::Duration::from_millis(300),
        lock_wait: std::time::Duration::from_secs(5),
        ..StopResumeSettings::default()
    };
    let (first, second) = (
        w.service_with(settings.clone()).await,
        w.service_with(settings).await,
    );
    let (a, b) = tokio::join!(first.evaluate_and_act(card, Trigger::Carddata), async {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        second.evaluate_and_act(card, Trigger::Carddata).await
    });
    let actions = [a.expect("first").action, b.expect("second").action];
    assert!(actions.contains(&Action::Stopped {
        reason: StopReason::NoPackage
    }));
    assert!(actions.contains(&Action::Nothing {
        why: NothingWhy::AlreadyStopped
    }));
    assert_eq!(w.calls("89004"), (1, 0), "exactly one gateway stop");
    assert_eq!(w.log(card).await.len(), 1, "exactly one audit row");
}

#[tokio::test]
async fn reason_change_writes_a_row_without_a_gateway_call() {
    let w = World::new().await;
    let card = w.card("89005", None).await;
    w.service
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect("evaluates");
    w.stores
        .cards
        .set_real_name(card, RealNameStatus::NotVerified)
        .await
        .expect("real-name");
    let d = w
        .service
        .evaluate_and_act(card, Trigger::Realname)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::ReasonChanged {
            from: Some(StopReason::NoPackage),
            to: StopReason::NotRealname
        }
    );
    assert_eq!(
        w.db_card(card).await.stop_reason,
        Some(StopReason::NotRealname)
    );
    let log = w.log(card).await;
    assert_eq!(log.len(), 2);
    assert_eq!(log[1].entry.gateway_outcome, GatewayOutcome::NotCalled);
    assert_eq!(
        (log[1].entry.from_status, log[1].entry.to_status),
        (NetworkStatus::Stopped, NetworkStatus::Stopped)
    );
    assert_eq!(w.calls("89005"), (1, 0));
}
