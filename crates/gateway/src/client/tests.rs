//! Unit tests of the HTTP client (the simulator-backed ones live in `tests/`).

use super::*;
use domain::RateLimitError;
use gateway_sim::{SimCardSpec, SimOptions, SimServer};

// `domain` builds `MockRateLimiter` but does not export it; the same mock, here.
mockall::mock! {
    RateLimiter {}
    #[async_trait]
    impl RateLimiter for RateLimiter {
        async fn reserve(&self, bucket: &str, per_second: u32, class: CallClass, max_wait: Duration)
            -> Result<Option<Duration>, RateLimitError>;
        async fn booked(&self, bucket: &str) -> Result<Duration, RateLimitError>;
    }
}

async fn sim_and_client(limiter: MockRateLimiter) -> (gateway_sim::SimHandle, HttpGateway) {
    let sim = SimServer::start(SimOptions::default()).await.unwrap();
    sim.state()
        .upsert_cards(vec![SimCardSpec::new("1")])
        .unwrap();
    let config = GatewayConfig {
        rate_limit_per_sec: 10,
        max_rate_wait: Duration::from_millis(500),
        ..GatewayConfig::new(sim.url())
    };
    let gw = HttpGateway::new(config, Some(Arc::new(limiter))).unwrap();
    (sim, gw)
}

#[tokio::test]
async fn no_slot_means_throttled_without_a_request() {
    let mut limiter = MockRateLimiter::new();
    limiter
        .expect_reserve()
        .withf(|bucket, rate, class, wait| {
            bucket == "1"
                && *rate == 10
                && *class == CallClass::Query
                && *wait == Duration::from_millis(500)
        })
        .times(1)
        .returning(|_, _, _, _| Ok(None));
    limiter
        .expect_reserve()
        .withf(|_, _, class, _| *class == CallClass::Command)
        .times(3) // three tries of the command
        .returning(|_, _, _, _| Ok(None));
    let (sim, gw) = sim_and_client(limiter).await;
    assert_eq!(
        gw.usage(CarrierId(1), "1").await,
        Err(GatewayError::RateLimited)
    );
    // A command retries a refused slot like any throttling, then gives up.
    assert_eq!(
        gw.stop(CarrierId(1), "1").await,
        Err(GatewayError::RateLimited)
    );
    assert_eq!(sim.state().stats().requests, 0);
}

#[tokio::test]
async fn a_reserved_slot_is_waited_for() {
    let mut limiter = MockRateLimiter::new();
    limiter
        .expect_reserve()
        .times(1)
        .returning(|_, _, _, _| Ok(Some(Duration::from_millis(200))));
    let (sim, gw) = sim_and_client(limiter).await;
    let started = Instant::now();
    assert_eq!(
        gw.realname(CarrierId(1), "1").await,
        Ok(RealNameStatus::Verified)
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(sim.state().stats().requests, 1);
}

#[tokio::test]
async fn an_unavailable_limiter_fails_open() {
    let mut limiter = MockRateLimiter::new();
    limiter
        .expect_reserve()
        .times(1)
        .returning(|_, _, _, _| Err(RateLimitError("redis down".into())));
    let (sim, gw) = sim_and_client(limiter).await;
    assert_eq!(
        gw.realname(CarrierId(1), "1").await,
        Ok(RealNameStatus::Verified)
    );
    assert_eq!(sim.state().stats().requests, 1);
}

#[tokio::test]
async fn a_zero_rate_skips_the_limiter() {
    let limiter = MockRateLimiter::new(); // any call would panic
    let (sim, gw) = sim_and_client(limiter).await;
    let gw = HttpGateway {
        config: Arc::new(GatewayConfig {
            rate_limit_per_sec: 0,
            ..gw.config().clone()
        }),
        ..gw
    };
    assert_eq!(gw.start(CarrierId(1), "1").await, Ok(NetworkStatus::Online));
    drop(sim);
}

#[tokio::test]
async fn a_mismatched_or_malformed_answer_is_a_decode_error() {
    use axum::{Json, Router, routing::post};
    let app = Router::new()
        .route(
            "/v1/cards/realname",
            post(|| async { Json(serde_json::json!({"iccid": "other", "real_name_status": 1})) }),
        )
        .route(
            "/v1/cards/usage",
            post(|| async {
                Json(serde_json::json!({"iccid": "1", "month": "April", "month_total_mb": 1}))
            }),
        )
        .route("/v1/cards/packages", post(|| async { "not json" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let gw = HttpGateway::new(GatewayConfig::new(format!("http://{addr}/")), None).unwrap();
    assert!(matches!(
        gw.realname(CarrierId(1), "1").await,
        Err(GatewayError::Decode(_))
    ));
    assert!(matches!(
        gw.usage(CarrierId(1), "1").await,
        Err(GatewayError::Decode(_))
    ));
    assert!(matches!(
        gw.packages(CarrierId(1), "1").await,
        Err(GatewayError::Decode(_))
    ));
    // Nothing listens on /v1/cards/stop: axum's 404 is the carrier not knowing the card.
    assert_eq!(
        gw.stop(CarrierId(1), "1").await,
        Err(GatewayError::NotFound)
    );
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let gw = HttpGateway::new(GatewayConfig::new(format!("http://{addr}")), None).unwrap();
    let err = gw.usage(CarrierId(1), "1").await.unwrap_err();
    assert!(matches!(err, GatewayError::Transport(_)), "{err:?}");
    assert!(err.is_retryable());
}

#[test]
fn backoff_grows_and_is_capped() {
    let p = RetryPolicy::default();
    for _ in 0..50 {
        let first = p.backoff(1);
        assert!(first >= Duration::from_millis(100) && first <= Duration::from_millis(200));
        let second = p.backoff(2);
        assert!(second >= Duration::from_millis(200) && second <= Duration::from_millis(400));
        let far = p.backoff(40);
        assert!(far >= Duration::from_secs(1) && far <= Duration::from_secs(2));
    }
}

#[tokio::test]
async fn each_carrier_reserves_from_its_own_bucket_at_its_own_rate() {
    let mut limiter = MockRateLimiter::new();
    limiter
        .expect_reserve()
        .withf(|bucket, rate, _, _| bucket == "1" && *rate == 10)
        .times(1)
        .returning(|_, _, _, _| Ok(Some(Duration::ZERO)));
    limiter
        .expect_reserve()
        .withf(|bucket, rate, _, _| bucket == "7" && *rate == 3)
        .times(1)
        .returning(|_, _, _, _| Ok(Some(Duration::ZERO)));
    let (sim, gw) = sim_and_client(limiter).await;
    let gw = HttpGateway {
        config: Arc::new(GatewayConfig {
            rate_limits: [(CarrierId(7), 3), (CarrierId(8), 0)].into_iter().collect(),
            ..gw.config().clone()
        }),
        ..gw
    };
    assert_eq!(gw.rate_of(CarrierId(2)), 10, "the default");
    assert_eq!(
        gw.realname(CarrierId(1), "1").await,
        Ok(RealNameStatus::Verified)
    );
    assert_eq!(
        gw.realname(CarrierId(7), "1").await,
        Ok(RealNameStatus::Verified)
    );
    // An override of 0: no limit, the limiter is not asked.
    assert_eq!(
        gw.realname(CarrierId(8), "1").await,
        Ok(RealNameStatus::Verified)
    );
    assert_eq!(sim.state().stats().requests, 3);
}

#[tokio::test]
async fn the_dispatch_room_is_what_the_budget_lets_start_within_the_horizon() {
    let mut limiter = MockRateLimiter::new();
    limiter
        .expect_reserve()
        .returning(|_, _, _, _| Ok(Some(Duration::ZERO)));
    limiter
        .expect_booked()
        .withf(|bucket| bucket == "1")
        .returning(|_| Ok(Duration::from_millis(400)));
    let (sim, gw) = sim_and_client(limiter).await;
    // No carrier called yet: an idle bucket at the default rate, 10/s.
    assert_eq!(gw.dispatch_room(Duration::from_secs(1)).await, Some(10));
    gw.dispatched(3);
    assert_eq!(
        gw.dispatch_room(Duration::from_secs(1)).await,
        Some(7),
        "3 pending"
    );
    assert!(gw.realname(CarrierId(1), "1").await.is_ok());
    // 10/s, booked 0.4 s ahead: 6 more calls fit in a 1 s horizon, less the 2 still pending.
    assert_eq!(gw.dispatch_room(Duration::from_secs(1)).await, Some(4));
    assert_eq!(gw.dispatch_room(Duration::from_millis(300)).await, Some(0));
    drop(sim);
}

#[tokio::test]
async fn a_configured_carrier_paces_the_dispatch_in_cards_per_call_and_says_when_it_frees() {
    let mut limiter = MockRateLimiter::new();
    limiter
        .expect_booked()
        .withf(|bucket| bucket == "7")
        .returning(|_| Ok(Duration::from_millis(400)));
    let (sim, gw) = sim_and_client(limiter).await;
    let onelink = crate::Paced {
        carrier: CarrierId(7),
        rate: 10,
        cards_per_call: 100,
    };
    // 10 calls/s booked 0.4 s ahead: 6 calls fit in a 1 s horizon, 100 cards each, and two
    // batches more to fill the lane.
    let room = gw
        .dispatch_room_with(Duration::from_secs(1), &[onelink])
        .await;
    assert_eq!(room.map(|r| r.cards), Some(800));
    // Booked past a 0.3 s horizon: no room until the booking is under it again, in 0.1 s.
    let room = gw
        .dispatch_room_with(Duration::from_millis(300), &[onelink])
        .await;
    assert_eq!(
        room,
        Some(crate::DispatchRoom {
            cards: 0,
            free_in: Duration::from_millis(101),
        })
    );
    drop(sim);
}

#[test]
fn command_bound_adds_every_try_and_every_retry_wait() {
    let config = GatewayConfig::new("http://127.0.0.1:1");
    // 3 × (2 s rate wait + 5 s timeout) + 2 × max(2 s back-off cap, 5 s Retry-After) = 31 s.
    assert_eq!(config.command_bound(), Duration::from_secs(31));
    let short = GatewayConfig {
        timeout: Duration::from_millis(1000),
        ..GatewayConfig::new("http://127.0.0.1:1")
    };
    assert_eq!(short.command_bound(), Duration::from_secs(19));
    let once = GatewayConfig {
        retry: RetryPolicy {
            attempts: 0,
            ..RetryPolicy::default()
        },
        ..GatewayConfig::new("http://127.0.0.1:1")
    };
    assert_eq!(
        once.command_bound(),
        Duration::from_secs(7),
        "at least one try"
    );
}
