//! The service over mocked stores and a mocked gateway (Redis is real: the lock and the protect
//! keys are Redis by nature). These pin what must *not* happen: no change of the card when the
//! carrier refused (its intent is closed `failed`), no gateway call for a reason change, no call
//! when the database says another is in flight, nothing at all while another holder has the
//! card's lock.

use chrono::{TimeZone, Utc};
use domain::store::{IntentClose, MockCardStore, MockPackageStore, Paged, StateWrite};
use domain::{
    Card, CardCategory, CardId, CardStateLog, CarrierId, GatewayOutcome, ManualClock,
    MonthCounters, NetworkStatus, NewCard, RealNameStatus, StopReason,
};
use gateway::{GatewayError, MockCarrierGateway};
use polling_queue::{CardLock, Keys, ProtectKeys};
use rust_decimal::Decimal;
use std::sync::Arc;
use std::time::Duration;
use stop_resume::{Action, StopResumeError, StopResumeService, StopResumeSettings, Trigger};
use test_support::TestRedis;

const ID: CardId = CardId(42);

fn card(net: NetworkStatus, reason: Option<StopReason>) -> Card {
    let t = Utc
        .with_ymd_and_hms(2026, 4, 2, 8, 0, 0)
        .single()
        .unwrap_or_default();
    Card {
        id: ID,
        facts: NewCard {
            iccid: "8986042".into(),
            msisdn: None,
            carrier_id: CarrierId(1),
            card_category: CardCategory::Normal,
            status: 1,
            real_name_status: RealNameStatus::Verified,
            network_status: net,
            enable_polling: true,
            device_id: None,
        },
        stop_reason: reason,
        data_usage_mb: Decimal::ZERO,
        usage: MonthCounters::default(),
        created_at: t,
        updated_at: t,
        deleted_at: None,
    }
}

const ROW: i64 = 7;

/// A card store that returns `card`, has no stale intent, and expects `intents` intents
/// (`pending` rows) closed with `closed`, never `ok`.
fn cards(card: Option<Card>, intents: usize, closed: GatewayOutcome) -> MockCardStore {
    let mut m = MockCardStore::new();
    m.expect_get().returning(move |_| Ok(card.clone()));
    m.expect_interrupt_stale_intents().returning(|_, _| Ok(0));
    m.expect_append_state_if()
        .times(intents)
        .withf(|e, _| e.gateway_outcome == GatewayOutcome::Pending)
        .returning(|_, _| Ok(StateWrite::Written(ROW)));
    m.expect_close_intent()
        .times(intents)
        .withf(move |row, outcome| *row == ROW && *outcome == closed)
        .returning(|_, _| Ok(IntentClose::Closed));
    m.expect_record_state_change().times(0);
    m.expect_state_log().returning(|_, _| Ok(no_rows()));
    m
}

/// A state log without rows: no refusal in a row, nothing backed off.
fn no_rows() -> Paged<CardStateLog> {
    Paged {
        items: Vec::new(),
        total: 0,
        page: 1,
        page_size: 3,
    }
}

/// No package at all: a verified, online card must stop for `no_package`.
fn no_packages() -> MockPackageStore {
    let mut m = MockPackageStore::new();
    m.expect_usages_of().returning(|_| Ok(Vec::new()));
    m
}

async fn service(
    redis: &TestRedis,
    cards: MockCardStore,
    gateway: MockCarrierGateway,
    lock_wait: Duration,
) -> (StopResumeService, CardLock) {
    let pool = redis.pool().await.expect("redis pool");
    let keys = Keys::new(redis.prefix.clone());
    let lock = CardLock::new(pool.clone(), keys.clone());
    let svc = StopResumeService::new(
        Arc::new(cards),
        Arc::new(no_packages()),
        Arc::new(gateway),
        ProtectKeys::new(pool, keys),
        lock.clone(),
        Arc::new(ManualClock::new(Utc::now())),
        StopResumeSettings {
            lock_wait,
            ..StopResumeSettings::default()
        },
    );
    (svc, lock)
}

#[tokio::test]
async fn carrier_refusal_closes_the_intent_failed_and_leaves_the_card() {
    let redis = TestRedis::new().await.expect("redis");
    let mut gw = MockCarrierGateway::new();
    gw.expect_stop().times(1).returning(|_, _| {
        Err(GatewayError::Carrier {
            status: 503,
            body: "busy".into(),
        })
    });
    let (svc, lock) = service(
        &redis,
        cards(
            Some(card(NetworkStatus::Online, None)),
            1,
            GatewayOutcome::Failed,
        ),
        gw,
        Duration::ZERO,
    )
    .await;
    let err = svc
        .evaluate_and_act(ID, Trigger::Carddata)
        .await
        .expect_err("refused");
    assert!(matches!(
        err,
        StopResumeError::Gateway {
            call: "stop",
            source: GatewayError::Carrier { status: 503, .. },
            ..
        }
    ));
    // The lock was released on the error path too.
    assert!(
        lock.try_lock(ID, Duration::from_secs(1))
            .await
            .expect("redis")
            .is_some()
    );
}

#[tokio::test]
async fn unexpected_answer_reads_the_status_and_closes_the_intent_failed() {
    let redis = TestRedis::new().await.expect("redis");
    let mut gw = MockCarrierGateway::new();
    gw.expect_stop()
        .times(1)
        .returning(|_, _| Ok(NetworkStatus::Online));
    // The refusal is not understood: the carrier's status says the card is still online.
    gw.expect_network_status()
        .times(1)
        .returning(|_, _| Ok(NetworkStatus::Online));
    let mut cs = MockCardStore::new();
    cs.expect_get()
        .returning(|_| Ok(Some(card(NetworkStatus::Online, None))));
    cs.expect_interrupt_stale_intents().returning(|_, _| Ok(0));
    cs.expect_state_log().returning(|_, _| Ok(no_rows()));
    cs.expect_append_state_if()
        .times(1)
        .returning(|_, _| Ok(StateWrite::Written(ROW)));
    cs.expect_close_intent().times(0);
    cs.expect_close_intent_noted()
        .times(1)
        .withf(|row, outcome, note| {
            *row == ROW && *outcome == GatewayOutcome::Failed && note == "refused"
        })
        .returning(|_, _, _| Ok(IntentClose::Closed));
    cs.expect_record_state_change().times(0);
    let (svc, _) = service(&redis, cs, gw, Duration::ZERO).await;
    let err = svc
        .evaluate_and_act(ID, Trigger::Carddata)
        .await
        .expect_err("refused");
    assert!(matches!(
        err,
        StopResumeError::UnexpectedStatus {
            got: NetworkStatus::Online,
            ..
        }
    ));
}

#[tokio::test]
async fn reason_change_calls_no_gateway() {
    let redis = TestRedis::new().await.expect("redis");
    let mut cs = MockCardStore::new();
    cs.expect_get().returning(|_| {
        Ok(Some(card(
            NetworkStatus::Stopped,
            Some(StopReason::TrafficExhausted),
        )))
    });
    cs.expect_interrupt_stale_intents().returning(|_, _| Ok(0));
    cs.expect_append_state_if()
        .times(1)
        .withf(|e, from_reason| {
            e.stop_reason == Some(StopReason::NoPackage)
                && e.gateway_outcome == GatewayOutcome::NotCalled
                && e.trigger == "data_reset"
                && e.to_status == NetworkStatus::Stopped
                && *from_reason == Some(StopReason::TrafficExhausted)
        })
        .returning(|_, _| Ok(StateWrite::Written(ROW)));
    cs.expect_close_intent().times(0);
    // No expectation on the gateway: any call panics.
    let (svc, _) = service(&redis, cs, MockCarrierGateway::new(), Duration::ZERO).await;
    let d = svc
        .evaluate_and_act(ID, Trigger::DataReset)
        .await
        .expect("evaluates");
    assert_eq!(
        d.action,
        Action::ReasonChanged {
            from: Some(StopReason::TrafficExhausted),
            to: StopReason::NoPackage
        }
    );
}

#[tokio::test]
async fn busy_when_another_holder_keeps_the_lock() {
    let redis = TestRedis::new().await.expect("redis");
    let mut cs = MockCardStore::new();
    cs.expect_get().times(0);
    let (svc, lock) = service(
        &redis,
        cs,
        MockCarrierGateway::new(),
        Duration::from_millis(100),
    )
    .await;
    let held = lock
        .try_lock(ID, Duration::from_secs(10))
        .await
        .expect("redis")
        .expect("free");
    let err = svc
        .evaluate_and_act(ID, Trigger::Carddata)
        .await
        .expect_err("busy");
    assert!(matches!(err, StopResumeError::Busy(id) if id == ID));
    // The other holder's lock is untouched.
    assert!(lock.unlock(ID, held).await.expect("redis"));
}

#[tokio::test]
async fn deleted_card_is_not_found() {
    let redis = TestRedis::new().await.expect("redis");
    let (svc, _) = service(
        &redis,
        cards(None, 0, GatewayOutcome::Failed),
        MockCarrierGateway::new(),
        Duration::ZERO,
    )
    .await;
    let err = svc
        .evaluate_and_act(ID, Trigger::Carddata)
        .await
        .expect_err("not found");
    assert!(matches!(err, StopResumeError::CardNotFound(id) if id == ID));
}

/// The database says another stop or start of the card is in flight (the Redis lock was lost):
/// no gateway call, `Busy`, and the caller decides again later.
#[tokio::test]
async fn an_intent_in_flight_in_the_database_means_busy_and_no_call() {
    let redis = TestRedis::new().await.expect("redis");
    let mut cs = MockCardStore::new();
    cs.expect_get()
        .returning(|_| Ok(Some(card(NetworkStatus::Online, None))));
    cs.expect_interrupt_stale_intents().returning(|_, _| Ok(0));
    cs.expect_state_log().returning(|_, _| Ok(no_rows()));
    cs.expect_append_state_if()
        .times(1)
        .returning(|_, _| Ok(StateWrite::InFlight));
    cs.expect_close_intent().times(0);
    // No expectation on the gateway: any call panics.
    let (svc, _) = service(&redis, cs, MockCarrierGateway::new(), Duration::ZERO).await;
    let err = svc
        .evaluate_and_act(ID, Trigger::Carddata)
        .await
        .expect_err("busy");
    assert!(matches!(err, StopResumeError::Busy(id) if id == ID));
}
