//! The service over mocked stores and a mocked gateway (Redis is real: the lock and the protect
//! keys are Redis by nature). These pin what must *not* happen: no database write when the
//! carrier refused, no gateway call for a reason change, nothing at all while another holder
//! has the card's lock.

use chrono::{TimeZone, Utc};
use domain::store::{MockCardStore, MockPackageStore};
use domain::{
    Card, CardCategory, CardId, CarrierId, GatewayOutcome, ManualClock, MonthCounters,
    NetworkStatus, RealNameStatus, StopReason,
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
        iccid: "8986042".into(),
        msisdn: None,
        carrier_id: CarrierId(1),
        card_category: CardCategory::Normal,
        status: 1,
        real_name_status: RealNameStatus::Verified,
        network_status: net,
        stop_reason: reason,
        enable_polling: true,
        device_id: None,
        data_usage_mb: Decimal::ZERO,
        usage: MonthCounters::default(),
        created_at: t,
        updated_at: t,
        deleted_at: None,
    }
}

/// A card store that returns `card` and expects `writes` state changes.
fn cards(card: Option<Card>, writes: usize) -> MockCardStore {
    let mut m = MockCardStore::new();
    m.expect_get().returning(move |_| Ok(card.clone()));
    m.expect_record_state_change()
        .times(writes)
        .returning(|_| Ok(()));
    m
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
async fn carrier_refusal_writes_nothing() {
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
        cards(Some(card(NetworkStatus::Online, None)), 0),
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
async fn unexpected_answer_writes_nothing() {
    let redis = TestRedis::new().await.expect("redis");
    let mut gw = MockCarrierGateway::new();
    gw.expect_stop()
        .times(1)
        .returning(|_, _| Ok(NetworkStatus::Online));
    let (svc, _) = service(
        &redis,
        cards(Some(card(NetworkStatus::Online, None)), 0),
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
    cs.expect_record_state_change()
        .times(1)
        .withf(|e| {
            e.stop_reason == Some(StopReason::NoPackage)
                && e.gateway_outcome == GatewayOutcome::NotCalled
                && e.trigger == "data_reset"
                && e.to_status == NetworkStatus::Stopped
        })
        .returning(|_| Ok(()));
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
        cards(None, 0),
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
