//! Devices through the API: bind/unbind, stop/start with protect periods, polling status.

use super::*;
use serde_json::json;

async fn device(w: &World, no: &str) -> i64 {
    let a = w
        .post("/api/admin/devices", ADMIN, json!({"device_no": no}))
        .await;
    a.ok(StatusCode::CREATED)["id"].as_i64().unwrap()
}

#[tokio::test]
async fn create_get_conflict_bind_unbind_delete() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let d = device(&w, "DEV-1").await;
    let a = w
        .post("/api/admin/devices", ADMIN, json!({"device_no": "DEV-1"}))
        .await;
    assert_eq!(
        a.problem(StatusCode::CONFLICT)["errors"][0]["pointer"],
        "/device_no"
    );
    w.post("/api/admin/devices", ADMIN, json!({"device_no": " "}))
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    w.post("/api/admin/devices", OPERATOR, json!({"device_no": "D2"}))
        .await
        .problem(StatusCode::FORBIDDEN);
    let c = card(&w, 1, json!({})).await;
    let a = w
        .post(
            &format!("/api/admin/devices/{d}/cards"),
            OPERATOR,
            json!({"card_id": c}),
        )
        .await;
    let b = a.ok(StatusCode::OK);
    assert_eq!(b["card"]["device_id"], d);
    // The device has no package: the bound card is stopped for no_package at once.
    assert_eq!(b["evaluation"]["action"], "stopped");
    assert_eq!(b["evaluation"]["reason"], "no_package");
    let v = w.get(&format!("/api/admin/devices/{d}"), VIEWER).await;
    assert_eq!(v.ok(StatusCode::OK)["card_ids"], json!([c]));
    w.post(
        &format!("/api/admin/devices/{d}/cards"),
        VIEWER,
        json!({"card_id": c}),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    w.post(
        &format!("/api/admin/devices/{d}/cards"),
        OPERATOR,
        json!({"card_id": 999}),
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let a = w
        .call(
            Method::DELETE,
            &format!("/api/admin/devices/{d}/cards/{c}"),
            Some(OPERATOR),
            None,
        )
        .await;
    assert!(a.ok(StatusCode::OK)["card"]["device_id"].is_null());
    w.call(
        Method::DELETE,
        &format!("/api/admin/devices/{d}/cards/{c}"),
        Some(OPERATOR),
        None,
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    let a = w
        .call(
            Method::DELETE,
            &format!("/api/admin/devices/{d}"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    w.get(&format!("/api/admin/devices/{d}"), ADMIN)
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn device_stop_stops_every_card_once_and_sets_the_protect_period() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let d = device(&w, "DEV-1").await;
    let mut cards = Vec::new();
    for i in 1..=3 {
        cards.push(card(&w, i, json!({"device_id": d})).await);
    }
    w.post(&format!("/api/admin/devices/{d}/stop"), VIEWER, json!({}))
        .await
        .problem(StatusCode::FORBIDDEN);
    let a = w
        .post(&format!("/api/admin/devices/{d}/stop"), OPERATOR, json!({}))
        .await;
    let r = a.ok(StatusCode::OK);
    assert_eq!(r["failed"], 0);
    assert_eq!(r["protect"], "stop");
    for i in 1..=3 {
        assert_eq!(w.sim.state().card(&iccid(i)).unwrap().stop_calls, 1);
    }
    for c in &cards {
        let card = w
            .stores
            .cards
            .get(domain::CardId(*c))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(card.stop_reason, Some(domain::StopReason::Protect));
    }
    let ttl = w.inspector.protect_ttl(domain::DeviceId(d)).await.unwrap();
    assert!(ttl.stop.is_some() && ttl.start.is_none());
    // A second stop calls the carrier for nobody.
    w.post(&format!("/api/admin/devices/{d}/stop"), OPERATOR, json!({}))
        .await
        .ok(StatusCode::OK);
    assert_eq!(w.sim.state().card(&iccid(1)).unwrap().stop_calls, 1);
    let e = w
        .get(&format!("/api/admin/cards/{}/explain", cards[0]), VIEWER)
        .await;
    let e = e.ok(StatusCode::OK);
    assert!(e["protect"]["stop_ttl_secs"].as_u64().unwrap() > 3500);
    assert_eq!(e["decision"]["reason"], "protect_period");
    // Start: the stop period ends, a start period begins, every card is started once.
    let a = w
        .post(
            &format!("/api/admin/devices/{d}/start"),
            OPERATOR,
            json!({}),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["failed"], 0);
    let ttl = w.inspector.protect_ttl(domain::DeviceId(d)).await.unwrap();
    assert!(ttl.stop.is_none() && ttl.start.is_some());
    assert_eq!(w.sim.state().card(&iccid(2)).unwrap().start_calls, 1);
    w.post("/api/admin/devices/999/stop", OPERATOR, json!({}))
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn device_polling_status_removes_and_restores_every_bound_card() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let d = device(&w, "DEV-1").await;
    let mut cards = Vec::new();
    for i in 1..=3 {
        cards.push(card(&w, i, json!({"device_id": d})).await);
    }
    let uri = format!("/api/admin/assets/device/{d}/polling-status");
    w.call(
        Method::PATCH,
        &uri,
        Some(VIEWER),
        Some(json!({"enable_polling": false})),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    let a = w
        .call(
            Method::PATCH,
            &uri,
            Some(OPERATOR),
            Some(json!({"enable_polling": false})),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["cards"], 3);
    for c in &cards {
        assert!(
            !w.inspector
                .queued_anywhere(domain::CardId(*c))
                .await
                .unwrap()
        );
    }
    let before = chrono::Utc::now().timestamp() as f64;
    let a = w
        .call(
            Method::PATCH,
            &uri,
            Some(OPERATOR),
            Some(json!({"enable_polling": true})),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["enqueued"], 3);
    for c in &cards {
        for s in scores(&w, *c).await {
            let s = s.unwrap();
            assert!(s <= chrono::Utc::now().timestamp() as f64 + 1.0 && s >= before - 1.0);
        }
    }
    // A card's own switch.
    let uri = format!("/api/admin/assets/card/{}/polling-status", cards[0]);
    w.call(
        Method::PATCH,
        &uri,
        Some(OPERATOR),
        Some(json!({"enable_polling": false})),
    )
    .await
    .ok(StatusCode::OK);
    assert!(
        !w.inspector
            .queued_anywhere(domain::CardId(cards[0]))
            .await
            .unwrap()
    );
    w.call(
        Method::PATCH,
        "/api/admin/assets/sim/1/polling-status",
        Some(OPERATOR),
        Some(json!({"enable_polling": true})),
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
    w.call(
        Method::PATCH,
        "/api/admin/assets/card/999/polling-status",
        Some(OPERATOR),
        Some(json!({"enable_polling": true})),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
}
