//! Alert rules and data cleanup through the API: CRUD, roles, validation, 404s.

use super::*;
use serde_json::json;

fn rule() -> Value {
    json!({"name": "backlog", "metric": "due_backlog", "task_type": "carddata",
        "operator": ">", "threshold": "100", "window_secs": 300, "enabled": true,
        "webhook_url": "https://hooks.example/cmp", "cooldown_secs": 600})
}

#[tokio::test]
async fn alert_rule_crud_roles_validation_history_and_404() {
    let w = World::new().await;
    for key in [VIEWER, OPERATOR] {
        w.post("/api/admin/polling-alert-rules", key, rule())
            .await
            .problem(StatusCode::FORBIDDEN);
    }
    let a = w
        .post("/api/admin/polling-alert-rules", ADMIN, rule())
        .await;
    let created = a.ok(StatusCode::CREATED).clone();
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["metric"], "due_backlog");
    assert_eq!(created["webhook_secret"].as_str().unwrap().len(), 64);

    let a = w
        .get(&format!("/api/admin/polling-alert-rules/{id}"), VIEWER)
        .await;
    let got = a.ok(StatusCode::OK);
    assert_eq!(got["name"], "backlog");
    assert!(
        got.get("webhook_secret").is_none(),
        "never shown again: {got}"
    );
    let a = w.get("/api/admin/polling-alert-rules", VIEWER).await;
    assert_eq!(a.ok(StatusCode::OK)["total"], 1);

    let mut bad = rule();
    bad["metric"] = json!("mean_duration_ms");
    w.post("/api/admin/polling-alert-rules", ADMIN, bad)
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let mut bad = rule();
    bad["webhook_url"] = json!("ftp://hooks.example/x");
    bad["window_secs"] = json!(5);
    let a = w.post("/api/admin/polling-alert-rules", ADMIN, bad).await;
    let pointers: Vec<&str> = a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers, vec!["/window_secs", "/webhook_url"]);
    let mut bad = rule();
    bad["metric"] = json!("stops_per_minute");
    bad["stop_reason"] = json!("manual");
    let a = w.post("/api/admin/polling-alert-rules", ADMIN, bad).await;
    assert_eq!(
        a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"][0]["pointer"],
        "/task_type"
    );

    let mut changed = rule();
    changed["threshold"] = json!("250");
    let a = w
        .call(
            Method::PUT,
            &format!("/api/admin/polling-alert-rules/{id}"),
            Some(ADMIN),
            Some(changed.clone()),
        )
        .await;
    assert_eq!(
        a.ok(StatusCode::OK)["threshold"],
        json!(250),
        "a JSON number"
    );
    w.call(
        Method::PUT,
        "/api/admin/polling-alert-rules/999999",
        Some(ADMIN),
        Some(changed),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    w.get("/api/admin/polling-alert-rules/999999", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);

    w.stores
        .alerts
        .record_firing(
            domain::AlertRuleId(id),
            rust_decimal::Decimal::from(300),
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    let a = w
        .get(
            &format!("/api/admin/polling-alert-history?rule_id={id}"),
            VIEWER,
        )
        .await;
    let h = a.ok(StatusCode::OK);
    assert_eq!(h["total"], 1);
    assert_eq!(h["items"][0]["value"], json!(300), "a JSON number");
    w.get("/api/admin/polling-alert-history?page_size=501", VIEWER)
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);

    w.call(
        Method::DELETE,
        &format!("/api/admin/polling-alert-rules/{id}"),
        Some(OPERATOR),
        None,
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    let a = w
        .call(
            Method::DELETE,
            &format!("/api/admin/polling-alert-rules/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    w.call(
        Method::DELETE,
        &format!("/api/admin/polling-alert-rules/{id}"),
        Some(ADMIN),
        None,
    )
    .await
    .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn data_cleanup_routes_roles_validation_run_and_404() {
    let w = World::new().await;
    let a = w.get("/api/admin/data-cleanup-configs", VIEWER).await;
    let list = a.ok(StatusCode::OK).clone();
    assert_eq!(list["total"], 8, "the migrations' defaults: {list}");
    let state_log = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["table_name"] == "tb_card_state_log")
        .unwrap()
        .clone();
    let id = state_log["id"].as_i64().unwrap();
    w.get(&format!("/api/admin/data-cleanup-configs/{id}"), VIEWER)
        .await
        .ok(StatusCode::OK);
    w.get("/api/admin/data-cleanup-configs/999999", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);

    let body = json!({"table_name": "tb_card_state_log", "retention_days": 30, "enabled": true, "batch_size": 500});
    for key in [VIEWER, OPERATOR] {
        w.call(
            Method::PUT,
            &format!("/api/admin/data-cleanup-configs/{id}"),
            Some(key),
            Some(body.clone()),
        )
        .await
        .problem(StatusCode::FORBIDDEN);
    }
    let a = w
        .call(
            Method::PUT,
            &format!("/api/admin/data-cleanup-configs/{id}"),
            Some(ADMIN),
            Some(body.clone()),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["retention_days"], 30);
    w.post("/api/admin/data-cleanup-configs", ADMIN, body.clone())
        .await
        .problem(StatusCode::CONFLICT);
    let a = w
        .post(
            "/api/admin/data-cleanup-configs",
            ADMIN,
            json!({"table_name": "tb_iot_card", "retention_days": 0, "enabled": true, "batch_size": 10}),
        )
        .await;
    assert_eq!(
        a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    w.call(
        Method::PUT,
        "/api/admin/data-cleanup-configs/999999",
        Some(ADMIN),
        Some(body.clone()),
    )
    .await
    .problem(StatusCode::NOT_FOUND);

    // Delete and re-create one config.
    let a = w
        .call(
            Method::DELETE,
            &format!("/api/admin/data-cleanup-configs/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    w.call(
        Method::DELETE,
        &format!("/api/admin/data-cleanup-configs/{id}"),
        Some(ADMIN),
        None,
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    let a = w.post("/api/admin/data-cleanup-configs", ADMIN, body).await;
    a.ok(StatusCode::CREATED);

    // Old state-log rows: the preview counts them, a run removes them.
    use sea_orm::ConnectionTrait;
    w.env
        .db
        .conn
        .execute_unprepared(
            "INSERT INTO tb_card_state_log (iot_card_id, from_status, to_status, stop_reason, trigger, gateway_outcome, created_at) \
             SELECT g, 1, 0, 'manual', 't', 'ok', now() - interval '40 days' FROM generate_series(1, 1200) g",
        )
        .await
        .unwrap();
    let a = w.get("/api/admin/data-cleanup/preview", VIEWER).await;
    let preview = a.ok(StatusCode::OK).clone();
    let row = preview
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["table_name"] == "tb_card_state_log")
        .unwrap();
    assert_eq!(row["rows"], 1200);
    w.post("/api/admin/data-cleanup/run", OPERATOR, json!({}))
        .await
        .problem(StatusCode::FORBIDDEN);
    let a = w
        .post("/api/admin/data-cleanup/run", ADMIN, json!({}))
        .await;
    let run_id = a.ok(StatusCode::ACCEPTED)["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Wait for the run's state-log row to complete.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let a = w
            .get("/api/admin/data-cleanup/logs?page_size=50", VIEWER)
            .await;
        let logs = a.ok(StatusCode::OK).clone();
        let done = logs["items"].as_array().unwrap().iter().any(|l| {
            l["run_id"] == run_id.as_str()
                && l["table_name"] == "tb_card_state_log"
                && l["status"] == "completed"
                && l["rows_deleted"] == 1200
        });
        if done {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "run not done: {logs}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let a = w.get("/api/admin/data-cleanup/progress", VIEWER).await;
    assert!(a.ok(StatusCode::OK).is_array());
}
