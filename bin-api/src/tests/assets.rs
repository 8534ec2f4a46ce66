//! Packages, package usages, config match and dry run, the audit log.

use super::*;
use serde_json::json;

#[tokio::test]
async fn a_purchase_for_an_owner_without_package_is_activated_and_resumes_the_card() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let c = card(&w, 1, json!({})).await;
    // No package: stopped at once by an evaluation (operator start then automation).
    w.post(&format!("/api/admin/cards/{c}/stop"), ADMIN, json!({}))
        .await
        .ok(StatusCode::OK);
    w.post(&format!("/api/admin/cards/{c}/start"), ADMIN, json!({}))
        .await
        .ok(StatusCode::OK);
    let p = w
        .post("/api/admin/packages", ADMIN, json!({"name": "1 GB", "data_limit_mb": "1024", "duration_days": 30, "reset_cycle": "monthly"}))
        .await;
    let p = p.ok(StatusCode::CREATED)["id"].as_i64().unwrap();
    w.post(
        "/api/admin/packages",
        ADMIN,
        json!({"name": "", "duration_days": 0}),
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
    w.post(
        "/api/admin/packages",
        OPERATOR,
        json!({"name": "x", "duration_days": 1}),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    let a = w
        .post(
            "/api/admin/package-usages",
            ADMIN,
            json!({"card_id": c, "package_id": p}),
        )
        .await;
    let u = a.ok(StatusCode::CREATED);
    assert_eq!(u["activated"], true);
    assert_eq!(u["usage"]["status"], "active");
    assert_eq!(u["evaluations"][0]["action"], "nothing");
    // A second purchase waits its turn.
    let a = w
        .post(
            "/api/admin/package-usages",
            ADMIN,
            json!({"card_id": c, "package_id": p}),
        )
        .await;
    assert_eq!(a.ok(StatusCode::CREATED)["usage"]["status"], "pending");
    for bad in [
        json!({"package_id": p}),
        json!({"card_id": c, "device_id": 1, "package_id": p}),
        json!({"card_id": 999, "package_id": p}),
        json!({"card_id": c, "package_id": 999}),
    ] {
        w.post("/api/admin/package-usages", ADMIN, bad)
            .await
            .problem(StatusCode::UNPROCESSABLE_ENTITY);
    }
    assert_eq!(
        w.stores
            .packages
            .usages_of(domain::PackageOwner::Card(domain::CardId(c)))
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn a_purchase_resumes_a_card_stopped_for_no_package() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let c = card(&w, 1, json!({})).await;
    let d = w
        .post("/api/admin/devices", ADMIN, json!({"device_no": "D"}))
        .await;
    let d = d.ok(StatusCode::CREATED)["id"].as_i64().unwrap();
    // Binding to a device without packages stops it for no_package.
    let b = w
        .post(
            &format!("/api/admin/devices/{d}/cards"),
            ADMIN,
            json!({"card_id": c}),
        )
        .await;
    assert_eq!(b.ok(StatusCode::OK)["evaluation"]["reason"], "no_package");
    let p = w
        .post(
            "/api/admin/packages",
            ADMIN,
            json!({"name": "u", "duration_days": 30}),
        )
        .await;
    let p = p.ok(StatusCode::CREATED)["id"].as_i64().unwrap();
    let a = w
        .post(
            "/api/admin/package-usages",
            ADMIN,
            json!({"device_id": d, "package_id": p}),
        )
        .await;
    let u = a.ok(StatusCode::CREATED);
    assert_eq!(u["evaluations"][0]["action"], "started", "{u}");
    let card = w
        .stores
        .cards
        .get(domain::CardId(c))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(card.facts.network_status, domain::NetworkStatus::Online);
}

#[tokio::test]
async fn match_and_dry_run() {
    let w = World::new().await;
    let general = config_everything(&w, 3600).await;
    let c = card(&w, 1, json!({})).await;
    card(&w, 2, json!({"card_category": "industry"})).await;
    let a = w
        .get(
            &format!("/api/admin/polling-configs/match?card_id={c}"),
            VIEWER,
        )
        .await;
    let m = a.ok(StatusCode::OK);
    assert_eq!(m["matched"]["id"], general);
    assert_eq!(m["candidates"].as_array().unwrap().len(), 1);
    w.get("/api/admin/polling-configs/match?card_id=999", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);
    w.get("/api/admin/polling-configs/match", VIEWER)
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let body = json!({"config": {"name": "industry fast", "priority": 1, "card_category": "industry",
        "carddata_interval_secs": 60}});
    let a = w
        .post("/api/admin/polling-configs/dry-run", ADMIN, body.clone())
        .await;
    let d = a.ok(StatusCode::OK);
    assert_eq!(d["polled_cards"], 2);
    assert_eq!(d["would_match"], 1);
    assert_eq!(d["would_change_interval"], 1);
    assert_eq!(d["would_change_queues"], 1);
    // Nothing was saved.
    assert_eq!(w.stores.configs.list_all().await.unwrap().len(), 1);
    w.post("/api/admin/polling-configs/dry-run", OPERATOR, body)
        .await
        .problem(StatusCode::FORBIDDEN);
    let a = w
        .post(
            "/api/admin/polling-configs/dry-run",
            ADMIN,
            json!({"id": 999, "config": {"name": "x"}}),
        )
        .await;
    a.problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_audit_log_is_for_admins() {
    let w = World::new().await;
    config_everything(&w, 60).await;
    w.get("/api/admin/admin-audit-log", OPERATOR)
        .await
        .problem(StatusCode::FORBIDDEN);
    w.get("/api/admin/admin-audit-log", VIEWER)
        .await
        .problem(StatusCode::FORBIDDEN);
    let a = w.get("/api/admin/admin-audit-log?page_size=1", ADMIN).await;
    let l = a.ok(StatusCode::OK);
    assert_eq!(l["total"], 1);
    assert_eq!(l["items"][0]["method"], "POST");
    assert_eq!(l["items"][0]["key_name"], "admin");
    assert_eq!(l["items"][0]["status"], 201);
    assert_eq!(l["items"][0]["summary"]["name"], "everything");
}
