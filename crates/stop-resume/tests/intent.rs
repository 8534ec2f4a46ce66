//! The durable intent (`docs/invariants.md`, invariant 4): a stop or start is a `pending` state-log
//! row before the carrier is asked, so a worker killed between the carrier's yes and the
//! database write, a carrier that never answers, or two evaluations at once after Redis lost
//! the card lock, cost no call the state log does not account for. Real PostgreSQL and Redis
//! (test-support), the real stores, the HTTP client against an in-process gateway-sim.

mod common;

use common::World;
use domain::{
    CarrierId, CarrierPackage, GatewayOutcome, MonthUsage, NetworkStatus, RealNameStatus,
};
use fred::prelude::*;
use gateway::{CallKind, CarrierGateway, GatewayError, HttpGateway};
use gateway_sim::{FaultsPatch, Hang, Script, ScriptStep};
use polling_queue::{CardLock, ProtectKeys, RedisKey};
use std::sync::Arc;
use std::time::Duration;
use stop_resume::{
    Action, NothingWhy, StopResumeError, StopResumeService, StopResumeSettings, Trigger,
};
use tokio::sync::Notify;

/// The carrier's real answer, then nothing: the process is killed right after the carrier
/// said yes, before the service could write it. The test drops the evaluation at that point,
/// which is what a SIGKILL looks like to the database: nothing after the call runs.
struct DiesAfterTheCarrier {
    inner: HttpGateway,
    answered: Arc<Notify>,
}

impl DiesAfterTheCarrier {
    async fn then_die(
        &self,
        got: Result<NetworkStatus, GatewayError>,
    ) -> Result<NetworkStatus, GatewayError> {
        self.answered.notify_one();
        std::future::pending::<()>().await;
        got
    }
}

#[async_trait::async_trait]
impl CarrierGateway for DiesAfterTheCarrier {
    async fn realname(&self, c: CarrierId, iccid: &str) -> Result<RealNameStatus, GatewayError> {
        self.inner.realname(c, iccid).await
    }
    async fn usage(&self, c: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError> {
        self.inner.usage(c, iccid).await
    }
    async fn packages(
        &self,
        c: CarrierId,
        iccid: &str,
    ) -> Result<Vec<CarrierPackage>, GatewayError> {
        self.inner.packages(c, iccid).await
    }
    async fn stop(&self, c: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        let got = self.inner.stop(c, iccid).await;
        self.then_die(got).await
    }
    async fn start(&self, c: CarrierId, iccid: &str) -> Result<NetworkStatus, GatewayError> {
        let got = self.inner.start(c, iccid).await;
        self.then_die(got).await
    }
}

/// A short card lock (a dead holder's lock is gone quickly) and a stale bound of 5 s.
fn settings() -> StopResumeSettings {
    StopResumeSettings {
        lock_ttl: Duration::from_millis(500),
        lock_wait: Duration::from_secs(5),
        call_deadline: Duration::from_secs(4),
        intent_grace: Duration::from_secs(1),
        ..StopResumeSettings::default()
    }
}

async fn outcomes(w: &World, card: domain::CardId) -> Vec<GatewayOutcome> {
    w.log(card)
        .await
        .iter()
        .map(|l| l.entry.gateway_outcome)
        .collect()
}

/// Applied stops and starts of the card at the carrier.
fn applied(w: &World, iccid: &str) -> u32 {
    let v = w.sim.state().card(iccid).expect("sim card");
    v.stops_applied + v.starts_applied
}

/// Rows that stand for a request that may have reached the carrier.
async fn rows_that_called(w: &World, card: domain::CardId) -> u32 {
    let n = outcomes(w, card)
        .await
        .into_iter()
        .filter(|o| matches!(o, GatewayOutcome::Ok | GatewayOutcome::Interrupted))
        .count();
    u32::try_from(n).expect("few rows")
}

/// Evaluates until the answer is not `Busy` (the database says a call is in flight), within
/// `within`; every `Busy` answer asked the carrier nothing.
async fn evaluate_once_free(
    w: &World,
    svc: &StopResumeService,
    card: domain::CardId,
    iccid: &str,
    within: Duration,
) -> Result<stop_resume::Decision, StopResumeError> {
    let calls = w.calls(iccid);
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match svc.evaluate_and_act(card, Trigger::Carddata).await {
            Err(StopResumeError::Busy(_)) => {
                assert_eq!(
                    w.calls(iccid),
                    calls,
                    "a busy evaluation asks the carrier nothing"
                );
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "still busy after {within:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_after_the_carriers_yes_costs_no_call_the_log_does_not_account_for() {
    let w = World::new().await;
    let iccid = "89101";
    let card = w.card(iccid, None).await; // online, no package: the table says stop.
    let answered = Arc::new(Notify::new());
    let pool = w.env.redis.pool().await.expect("redis pool");
    let dying = StopResumeService::new(
        w.stores.cards.clone(),
        w.stores.packages.clone(),
        Arc::new(DiesAfterTheCarrier {
            inner: common::gateway(&w.sim),
            answered: answered.clone(),
        }),
        ProtectKeys::new(pool.clone(), w.keys.clone()),
        CardLock::new(pool, w.keys.clone()),
        Arc::new(w.clock.clone()),
        settings(),
    );
    {
        let run = dying.evaluate_and_act(card, Trigger::Carddata);
        tokio::pin!(run);
        tokio::select! {
            r = &mut run => panic!("the evaluation was to die after the carrier's yes: {r:?}"),
            () = answered.notified() => {}
        }
        // Dropped here: the worker is gone.
    }
    assert_eq!(applied(&w, iccid), 1, "the carrier stopped the card");
    assert_eq!(
        w.db_card(card).await.facts.network_status,
        NetworkStatus::Online,
        "the database did not follow: it never heard the yes"
    );
    assert_eq!(outcomes(&w, card).await, vec![GatewayOutcome::Pending]);

    // Another worker at once: the intent is younger than the stale bound, so a call may be in
    // flight; it asks nothing (Busy) until the bound has passed, then settles the intent
    // honestly and decides again on the database's facts.
    let survivor = w.service_with(settings()).await;
    let first = survivor.evaluate_and_act(card, Trigger::Carddata).await;
    assert!(
        matches!(first, Err(StopResumeError::Busy(_))),
        "an intent in flight: busy, got {first:?}"
    );
    assert_eq!(w.calls(iccid), (1, 0));
    let d = evaluate_once_free(&w, &survivor, card, iccid, Duration::from_secs(30))
        .await
        .expect("evaluates once the intent is stale");
    assert!(matches!(d.action, Action::Stopped { .. }), "{d:?}");
    assert_eq!(
        outcomes(&w, card).await,
        vec![GatewayOutcome::Interrupted, GatewayOutcome::Ok]
    );
    // The outside check of the fault suite: no call beyond one per row that made one.
    assert_eq!(applied(&w, iccid), 2);
    assert!(applied(&w, iccid) <= rows_that_called(&w, card).await);
    let db = w.db_card(card).await;
    let sim = w.sim.state().card(iccid).expect("sim card");
    assert_eq!(db.facts.network_status, NetworkStatus::Stopped);
    assert_eq!(
        sim.network_status, db.facts.network_status,
        "database and carrier agree"
    );

    // And nothing more after that.
    let again = survivor
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect("evaluates");
    assert_eq!(
        again.action,
        Action::Nothing {
            why: NothingWhy::AlreadyStopped
        }
    );
    assert_eq!(applied(&w, iccid), 2);
}

#[tokio::test]
async fn a_carrier_that_never_answers_is_cut_off_at_the_deadline_as_interrupted() {
    let w = World::new().await;
    let iccid = "89102";
    let card = w.card(iccid, None).await;
    w.sim.state().set_script(Script {
        fail_next: vec![ScriptStep::Hang(Hang::Hang)],
        call: Some(CallKind::Stop),
    });
    let svc = w
        .service_with(StopResumeSettings {
            call_deadline: Duration::from_millis(300),
            ..settings()
        })
        .await;

    let err = svc
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect_err("cut off");
    assert!(
        matches!(err, StopResumeError::CallCutOff { call: "stop", .. }),
        "got {err:?}"
    );
    assert_eq!(outcomes(&w, card).await, vec![GatewayOutcome::Interrupted]);
    assert_eq!(
        w.db_card(card).await.facts.network_status,
        NetworkStatus::Online
    );

    // The next evaluation decides again: the carrier answers now.
    let d = svc
        .evaluate_and_act(card, Trigger::Carddata)
        .await
        .expect("evaluates");
    assert!(matches!(d.action, Action::Stopped { .. }), "{d:?}");
    assert_eq!(
        outcomes(&w, card).await,
        vec![GatewayOutcome::Interrupted, GatewayOutcome::Ok]
    );
    assert!(applied(&w, iccid) <= rows_that_called(&w, card).await);
    assert_eq!(
        w.db_card(card).await.facts.network_status,
        NetworkStatus::Stopped
    );
}

/// Redis loses the card lock while a stop is at the carrier: a second evaluation takes the lock,
/// but the database holds the intent in flight, so it asks nothing; once the first is done it
/// finds nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_lock_lost_mid_call_still_calls_the_carrier_once() {
    let w = World::new().await;
    let iccid = "89103";
    let card = w.card(iccid, None).await;
    w.sim
        .state()
        .set_faults(FaultsPatch {
            latency_ms: Some(1_000),
            ..FaultsPatch::default()
        })
        .expect("faults");
    let (first, second) = (w.service.clone(), w.another_service().await);

    let running =
        tokio::spawn(async move { first.evaluate_and_act(card, Trigger::Carddata).await });
    // Wait for the intent (the call is under way from then on).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while outcomes(&w, card).await != vec![GatewayOutcome::Pending] {
        assert!(tokio::time::Instant::now() < deadline, "no intent written");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pool = w.env.redis.pool().await.expect("redis pool");
    let lock_key = w.keys.render(&RedisKey::CardLock { card });
    let removed: i64 = pool.del(lock_key).await.expect("del");
    assert_eq!(removed, 1, "the lock was held, and is gone now");

    let err = second
        .evaluate_and_act(card, Trigger::Package)
        .await
        .expect_err("the database refuses a second call");
    assert!(
        matches!(err, StopResumeError::Busy(id) if id == card),
        "got {err:?}"
    );

    let d = running
        .await
        .expect("joins")
        .expect("the first stops the card");
    assert!(matches!(d.action, Action::Stopped { .. }), "{d:?}");
    let after = second
        .evaluate_and_act(card, Trigger::Package)
        .await
        .expect("evaluates");
    assert_eq!(
        after.action,
        Action::Nothing {
            why: NothingWhy::AlreadyStopped
        }
    );
    assert_eq!(w.calls(iccid), (1, 0), "one stop asked of the carrier");
    assert_eq!(outcomes(&w, card).await, vec![GatewayOutcome::Ok]);
}
