//! `POST /api/carriers/{carrier_id}/stream`: a carrier's push stream (1NCE Data Streamer
//! records) applied once through the exact usage write, refused whole when bad or
//! unauthenticated, counted once with the polls of the same card, stopping a card over its
//! limit and pushing back its next usage poll.

use super::*;
use axum::http::HeaderValue;
use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use domain::{CardId, CarrierProtocol, MonthUsage};
use rust_decimal::Decimal;
use sea_orm::ConnectionTrait;
use serde_json::json;

const CARRIER: i64 = 41;
const USER: &str = "stream-user";
const PASSWORD: &str = "stream-S3cret";

/// A 1NCE carrier on gateway-sim with stream credentials, known to the API's router.
async fn onence(w: &World, id: i64) {
    let a = w
        .post(
            "/api/admin/carriers",
            ADMIN,
            json!({"carrier_id": id, "name": "1NCE", "protocol": "1nce",
                "base_url": w.sim.url_of(CarrierProtocol::OneNce),
                "credentials": {"client_id": "sim-1nce-client", "client_secret": "sim-1nce-secret",
                    "stream_username": USER, "stream_password": PASSWORD}}),
        )
        .await;
    let view = a.ok(StatusCode::CREATED);
    assert_eq!(
        view["credential_fields"],
        json!([
            "client_id",
            "client_secret",
            "stream_password",
            "stream_username"
        ])
    );
    assert!(!view.to_string().contains(PASSWORD));
    w.state
        .carriers
        .refresh(w.stores.carriers.as_ref())
        .await
        .unwrap();
}

/// A data usage record as 1NCE's Data Streamer posts it.
fn data(id: u64, card: u64, mb: &str, ended: DateTime<Utc>) -> Value {
    json!({
        "id": id,
        "imsi": "901405100000001",
        "organisation": {"name": "8100xxxx", "id": 1234},
        "start_timestamp": (ended - Duration::minutes(15)).to_rfc3339(),
        "end_timestamp": ended.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "sim": {"iccid": iccid(card), "id": 1, "msisdn": "882285100000001"},
        "traffic_type": {"description": "Data", "id": 5},
        "volume": {"total": mb.parse::<serde_json::Number>().unwrap(), "rx": 0, "tx": 0},
        "cost": 0.001176
    })
}

fn basic(user: &str, password: &str) -> String {
    let raw = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

async fn push(w: &World, carrier: i64, auth: Option<&str>, body: &[u8]) -> Answer {
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(format!("/api/carriers/{carrier}/stream"))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(a) = auth {
        req = req.header(header::AUTHORIZATION, HeaderValue::from_str(a).unwrap());
    }
    w.send(req.body(Body::from(body.to_vec())).unwrap()).await
}

async fn post_records(w: &World, records: Value) -> Answer {
    push(
        w,
        CARRIER,
        Some(&basic(USER, PASSWORD)),
        &serde_json::to_vec(&records).unwrap(),
    )
    .await
}

async fn count(w: &World, sql: &str) -> i64 {
    let row = w
        .env
        .db
        .conn
        .query_one_raw(sea_orm::Statement::from_string(
            sea_orm::DatabaseBackend::Postgres,
            sql.to_owned(),
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap()
}

async fn card_row(w: &World, id: i64) -> domain::Card {
    w.stores.cards.get(CardId(id)).await.unwrap().unwrap()
}

/// The current month in the test's `CMP_TIMEZONE` (Asia/Shanghai).
fn month_now(w: &World) -> chrono::NaiveDate {
    gateway::carriers::units::month_of(Utc::now(), w.state.admin.timezone())
}

/// The exact usage write a carddata poll makes with the carrier's month total.
async fn poll(w: &World, id: i64, total: &str) -> Option<domain::UsageUpdate> {
    let asked = Utc::now();
    w.stores
        .cards
        .record_usage(
            CardId(id),
            &MonthUsage {
                month: month_now(w),
                month_total_mb: total.parse().unwrap(),
            },
            asked,
            asked + Duration::milliseconds(1),
        )
        .await
        .unwrap()
        .unwrap()
        .update
}

fn mb(s: &str) -> Decimal {
    s.parse().unwrap()
}

#[tokio::test]
async fn a_record_is_applied_once_and_a_replay_changes_nothing() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    onence(&w, CARRIER).await;
    let id = card(&w, 1, json!({"carrier_id": CARRIER})).await;
    let ended = Utc::now() - Duration::minutes(1);
    let post = json!([
        data(9_000_000_001, 1, "10.5", ended),
        data(9_000_000_002, 1, "2.25", ended),
        {"id": 77, "traffic_type": {"id": 6, "description": "SMS"}, "sim": {"iccid": iccid(1)}},
        {"id": 78, "event_type": {"id": 1, "description": "Update location"}},
    ]);
    let a = post_records(&w, post.clone()).await;
    let r = a.ok(StatusCode::OK);
    assert_eq!(r["records"], 4);
    assert_eq!(r["applied"], 2);
    assert_eq!(r["duplicate"], 0);
    assert_eq!(r["ignored"], 2);
    assert_eq!(r["ignored_kinds"], json!({"event": 1, "sms": 1}));
    assert_eq!(r["counted_mb"], "12.75");
    assert_eq!(r["cards"], 1);
    let c = card_row(&w, id).await;
    assert_eq!(c.usage.current_month_usage_mb, mb("12.75"));
    assert_eq!(c.usage.streamed_ahead_mb, mb("12.75"));
    assert_eq!(c.usage.last_gateway_total_mb, mb("0"));
    assert_eq!(c.data_usage_mb, mb("12.75"));
    assert_eq!(count(&w, "SELECT count(*) FROM tb_carrier_event").await, 2);
    assert_eq!(
        count(&w, "SELECT count(*) FROM tb_data_usage_record").await,
        2
    );

    // The carrier resends the post (it did not see our 200): nothing changes.
    let a = post_records(&w, post).await;
    let r = a.ok(StatusCode::OK);
    assert_eq!(r["applied"], 0);
    assert_eq!(r["duplicate"], 2);
    assert_eq!(r["counted_mb"], "0");
    assert_eq!(r["cards"], 0);
    assert_eq!(card_row(&w, id).await.usage, c.usage);
    assert_eq!(card_row(&w, id).await.data_usage_mb, c.data_usage_mb);
    assert_eq!(count(&w, "SELECT count(*) FROM tb_carrier_event").await, 2);
    assert_eq!(
        count(&w, "SELECT count(*) FROM tb_data_usage_record").await,
        2
    );

    // The same record twice in one post counts once.
    let twice = json!([
        data(9_000_000_003, 1, "1", ended),
        data(9_000_000_003, 1, "1", ended)
    ]);
    let a = post_records(&w, twice).await;
    let r = a.ok(StatusCode::OK);
    assert_eq!(
        (r["applied"].as_u64(), r["duplicate"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        card_row(&w, id).await.usage.current_month_usage_mb,
        mb("13.75")
    );
}

#[tokio::test]
async fn unauthenticated_refused_and_bad_posts_write_nothing() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    onence(&w, CARRIER).await;
    let id = card(&w, 1, json!({"carrier_id": CARRIER})).await;
    let body = serde_json::to_vec(&json!([data(1, 1, "5", Utc::now())])).unwrap();

    for auth in [
        None,
        Some(basic(USER, "wrong")),
        Some(basic("someone", PASSWORD)),
        Some(format!("Bearer {ADMIN}")),
        Some("Basic ???".to_owned()),
    ] {
        let a = push(&w, CARRIER, auth.as_deref(), &body).await;
        a.problem(StatusCode::UNAUTHORIZED);
    }
    // An unknown carrier, and one whose protocol has no push stream.
    push(&w, 999, Some(&basic(USER, PASSWORD)), &body)
        .await
        .problem(StatusCode::NOT_FOUND);
    let a = w
        .post(
            "/api/admin/carriers",
            ADMIN,
            json!({"carrier_id": 42, "name": "CM", "protocol": "onelink",
                "base_url": "http://127.0.0.1:9", "credentials": {"appid": "a", "password": "p"}}),
        )
        .await;
    a.ok(StatusCode::CREATED);
    push(&w, 42, Some(&basic(USER, PASSWORD)), &body)
        .await
        .problem(StatusCode::NOT_FOUND);

    // Not JSON: 400; a bad record among good ones: 422 naming it; nothing of either written.
    push(&w, CARRIER, Some(&basic(USER, PASSWORD)), b"[{\"id\": 1,")
        .await
        .problem(StatusCode::BAD_REQUEST);
    let mut bad = data(2, 1, "1", Utc::now());
    bad["volume"]["total"] = json!("-3");
    let a = post_records(&w, json!([data(3, 1, "1", Utc::now()), bad])).await;
    let p = a.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(p["errors"][0]["pointer"], "/1/volume/total");
    post_records(&w, json!("nothing"))
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);

    // A disabled carrier: authenticated, refused.
    let a = w
        .call(
            Method::PATCH,
            &format!("/api/admin/carriers/{CARRIER}/status"),
            Some(ADMIN),
            Some(json!({"enabled": false})),
        )
        .await;
    a.ok(StatusCode::OK);
    post_records(&w, json!([data(4, 1, "1", Utc::now())]))
        .await
        .problem(StatusCode::FORBIDDEN);

    assert_eq!(count(&w, "SELECT count(*) FROM tb_carrier_event").await, 0);
    assert_eq!(
        count(&w, "SELECT count(*) FROM tb_data_usage_record").await,
        0
    );
    assert_eq!(
        card_row(&w, id).await.usage,
        domain::MonthCounters::default()
    );
}

#[tokio::test]
async fn an_unknown_card_is_counted_not_fatal() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    onence(&w, CARRIER).await;
    let id = card(&w, 1, json!({"carrier_id": CARRIER})).await;
    // Card 2 exists, but on another carrier: unknown to this stream.
    card(&w, 2, json!({})).await;
    let now = Utc::now();
    let a = post_records(
        &w,
        json!([
            data(11, 1, "3", now),
            data(12, 404, "7", now),
            data(13, 2, "7", now)
        ]),
    )
    .await;
    let r = a.ok(StatusCode::OK);
    assert_eq!(r["applied"], 1);
    assert_eq!(r["unknown_card"], 2);
    assert_eq!(card_row(&w, id).await.usage.current_month_usage_mb, mb("3"));
    assert_eq!(count(&w, "SELECT count(*) FROM tb_carrier_event").await, 1);
}

#[tokio::test]
async fn polls_after_a_pushed_record_count_nothing_twice() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    onence(&w, CARRIER).await;
    let included = card(&w, 1, json!({"carrier_id": CARRIER})).await;
    let lagging = card(&w, 2, json!({"carrier_id": CARRIER})).await;
    for id in [included, lagging] {
        poll(&w, id, "100").await;
    }
    let now = Utc::now();
    post_records(&w, json!([data(21, 1, "30", now), data(22, 2, "30", now)]))
        .await
        .ok(StatusCode::OK);

    // The carrier's total already includes the 30 MB session, and 5 MB more.
    let u = poll(&w, included, "135").await.unwrap();
    assert_eq!(u.delta_mb, mb("5"));
    let c = card_row(&w, included).await;
    assert_eq!(c.usage.current_month_usage_mb, mb("135"));
    assert_eq!(c.usage.streamed_ahead_mb, mb("0"));
    assert_eq!(c.data_usage_mb, mb("135"));

    // The carrier's total lags: 10 MB more, not yet the session; then unchanged; then caught up.
    let u = poll(&w, lagging, "110").await.unwrap();
    assert_eq!(u.delta_mb, mb("0"));
    assert_eq!(
        card_row(&w, lagging).await.usage.current_month_usage_mb,
        mb("130")
    );
    assert!(poll(&w, lagging, "110").await.is_none(), "nothing new");
    let u = poll(&w, lagging, "142").await.unwrap();
    assert_eq!(u.delta_mb, mb("12"));
    let c = card_row(&w, lagging).await;
    assert_eq!(c.usage.current_month_usage_mb, mb("142"));
    assert_eq!(c.usage.streamed_ahead_mb, mb("0"));
    // The recorded deltas of the month sum to the carrier's total.
    let sum = count(
        &w,
        &format!(
            "SELECT sum(delta_mb)::bigint FROM tb_data_usage_record WHERE iot_card_id = {lagging}"
        ),
    )
    .await;
    assert_eq!(sum, 142);
}

#[tokio::test]
async fn crossing_the_limit_stops_the_card_and_the_usage_poll_is_pushed_back() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    onence(&w, CARRIER).await;
    let id = card(&w, 1, json!({"carrier_id": CARRIER})).await;
    let calm = card(&w, 2, json!({"carrier_id": CARRIER})).await;
    let now = Utc::now();
    for owner in [id, calm] {
        w.stores
            .packages
            .create_usage(&domain::NewPackageUsage::active(
                domain::PackageOwner::Card(CardId(owner)),
                Some(mb("10")),
                Decimal::ONE,
                Decimal::ZERO,
                now - Duration::days(1),
                now + Duration::days(30),
            ))
            .await
            .unwrap();
    }
    let before = scores(&w, id).await[1].unwrap();
    assert!(
        before <= (Utc::now().timestamp() + 5) as f64,
        "due now: {before}"
    );

    let a = post_records(&w, json!([data(31, 1, "12", now), data(32, 2, "1", now)])).await;
    let r = a.ok(StatusCode::OK);
    assert_eq!(r["applied"], 2);
    assert_eq!(r["evaluations"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["evaluations"][0]["card_id"], id);
    assert_eq!(r["evaluations"][0]["action"], "stopped");
    assert_eq!(r["evaluations"][0]["reason"], "traffic_exhausted");
    let c = card_row(&w, id).await;
    assert_eq!(c.facts.network_status, domain::NetworkStatus::Stopped);
    assert_eq!(c.stop_reason, Some(domain::StopReason::TrafficExhausted));
    assert_eq!(
        card_row(&w, calm).await.facts.network_status,
        domain::NetworkStatus::Online
    );
    // The next usage poll of the calm card is one carddata interval away: the reconciliation.
    let pushed = scores(&w, calm).await[1].unwrap();
    let expected = (now + Duration::seconds(3600)).timestamp() as f64;
    assert!((pushed - expected).abs() < 30.0, "{pushed} vs {expected}");
}
