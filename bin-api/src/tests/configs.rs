//! Polling configs through the API.

use super::*;
use serde_json::json;

fn body(name: &str) -> Value {
    json!({"name": name, "priority": 10, "enabled": true, "card_condition": null,
        "carddata_interval_secs": 60, "realname_interval_secs": 3600})
}

#[tokio::test]
async fn crud_status_and_roles() {
    let w = World::new().await;
    let created = w
        .post("/api/admin/polling-configs", ADMIN, body("all"))
        .await;
    let created = created.ok(StatusCode::CREATED).clone();
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["carddata_interval_secs"], 60);
    // Viewer and operator may read, not write.
    w.get(&format!("/api/admin/polling-configs/{id}"), VIEWER)
        .await
        .ok(StatusCode::OK);
    for key in [VIEWER, OPERATOR] {
        w.post("/api/admin/polling-configs", key, body("x"))
            .await
            .problem(StatusCode::FORBIDDEN);
    }
    let list = w.get("/api/admin/polling-configs", VIEWER).await;
    assert_eq!(list.ok(StatusCode::OK)["total"], 1);
    let mut changed = body("renamed");
    changed["carddata_interval_secs"] = json!(120);
    let a = w
        .call(
            Method::PUT,
            &format!("/api/admin/polling-configs/{id}"),
            Some(ADMIN),
            Some(changed),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["carddata_interval_secs"], 120);
    let a = w
        .call(
            Method::PATCH,
            &format!("/api/admin/polling-configs/{id}/status"),
            Some(ADMIN),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["enabled"], false);
    let a = w
        .call(
            Method::DELETE,
            &format!("/api/admin/polling-configs/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    w.get(&format!("/api/admin/polling-configs/{id}"), ADMIN)
        .await
        .problem(StatusCode::NOT_FOUND);
    w.call(
        Method::DELETE,
        &format!("/api/admin/polling-configs/{id}"),
        Some(ADMIN),
        None,
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    // Every write was audited with the key, the target and the outcome.
    let audit = w.audit().await;
    assert!(
        audit
            .iter()
            .any(|r| r.entry.status == 403 && r.entry.key_name.as_deref() == Some("viewer"))
    );
    let delete = audit
        .iter()
        .find(|r| r.entry.method == "DELETE" && r.entry.status == 204)
        .unwrap();
    assert_eq!(delete.entry.target["id"], id);
    assert_eq!(delete.entry.key_name.as_deref(), Some("admin"));
}

#[tokio::test]
async fn invalid_configs_change_nothing() {
    let w = World::new().await;
    let mut bad = body("");
    bad["carddata_interval_secs"] = json!(0);
    let a = w.post("/api/admin/polling-configs", ADMIN, bad).await;
    let problem = a.problem(StatusCode::UNPROCESSABLE_ENTITY);
    let pointers: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers, vec!["/name", "/carddata_interval_secs"]);
    let a = w
        .post(
            "/api/admin/polling-configs",
            ADMIN,
            json!({"name": "x", "card_condition": "bogus"}),
        )
        .await;
    a.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(w.stores.configs.list_all().await.unwrap().is_empty());
    w.call(
        Method::PUT,
        "/api/admin/polling-configs/999",
        Some(ADMIN),
        Some(body("x")),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    w.get("/api/admin/polling-configs/abc", ADMIN)
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
}
