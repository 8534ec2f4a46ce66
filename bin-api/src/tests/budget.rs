//! `GET /carriers/budget`: nothing before a worker computed the figures, then every carrier's
//! budget against its cards' demand as JSON numbers; `carrier_round_ratio` rules are accepted
//! (the database's check included) and refuse a task type; the route refuses writes.

use super::*;
use serde_json::json;

async fn seed(w: &World) {
    for body in [
        json!({"carrier_id": 1, "name": "China Mobile", "protocol": "onelink",
            "base_url": "http://127.0.0.1:9", "credentials": {"appid": "a", "password": "p"},
            "rate_limit_per_sec": 4, "batch_size": 50,
            // The batch queries are assumed calls: turned on, so OneLink batches 50 a call.
            "assumed_calls": ["realname_batch", "usage_batch", "network_status_batch"]}),
        json!({"carrier_id": 2, "name": "China Unicom", "protocol": "control-center",
            "base_url": "http://127.0.0.1:9", "credentials": {"username": "u", "api_key": "k"},
            "rate_limit_per_sec": 5}),
    ] {
        w.post("/api/admin/carriers", ADMIN, body)
            .await
            .ok(StatusCode::CREATED);
    }
    w.post(
        "/api/admin/polling-configs",
        ADMIN,
        json!({"name": "usage and packages", "priority": 10,
            "carddata_interval_secs": 300, "package_interval_secs": 3600,
            "protect_interval_secs": 600}),
    )
    .await
    .ok(StatusCode::CREATED);
    use sea_orm::ConnectionTrait as _;
    w.env
        .db
        .conn
        .execute_unprepared(
            "INSERT INTO tb_iot_card (iccid, carrier_id) \
             SELECT 'a' || g, 1 FROM generate_series(1, 6000) g \
             UNION ALL SELECT 'b' || g, 2 FROM generate_series(1, 900) g",
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_budget_answer_gives_every_carrier_s_figures() {
    let w = World::new().await;
    seed(&w).await;

    // No worker computed the figures yet.
    let none = w.get("/api/admin/carriers/budget", VIEWER).await;
    let none = none.ok(StatusCode::OK);
    assert!(none["computed_at"].is_null());
    assert_eq!(none["carriers"], json!([]));
    assert_eq!(none["used_window_secs"], 300);

    // What the worker's `carrier_budget` job does every minute.
    w.state.ops.budget.refresh().await.unwrap();
    let a = w.get("/api/admin/carriers/budget", VIEWER).await;
    let b = a.ok(StatusCode::OK);
    assert!(b["computed_at"].is_string());
    let carriers = b["carriers"].as_array().unwrap();
    assert_eq!(carriers.len(), 2);

    // Carrier 1: 6,000/(300×50) + 6,000/3,600 = 0.4 + 5/3 calls/s against 4: under budget.
    let one = &carriers[0];
    assert_eq!(one["carrier_id"], 1);
    assert_eq!(one["protocol"], "onelink");
    assert_eq!(one["allowed_calls_per_sec"], 4.0);
    assert_eq!(one["batch_size"], 50);
    assert_eq!(one["used_calls_per_sec"], 0.0);
    let demand = one["demand_calls_per_sec"].as_f64().unwrap();
    assert!((demand - (0.4 + 5.0 / 3.0)).abs() < 1e-9, "{demand}");
    assert_eq!(one["round_ratio"], 1.0);
    assert_eq!(
        one["tasks"],
        json!([
            {"task_type": "carddata", "interval_secs": 300, "cards": 6000, "cards_per_call": 50,
             "demand_calls_per_sec": 0.4, "round_secs": 300.0, "over": false},
            {"task_type": "package", "interval_secs": 3600, "cards": 6000, "cards_per_call": 1,
             "demand_calls_per_sec": one["tasks"][1]["demand_calls_per_sec"],
             "round_secs": 3600.0, "over": false},
        ])
    );

    // Carrier 2, one card a call: 900/300 + 900/3,600 = 3.25 calls/s against 5... under; its
    // figures would stretch past the interval at 2 calls/s.
    let two = &carriers[1];
    assert_eq!(two["batch_size"], 1);
    assert_eq!(two["demand_calls_per_sec"], 3.25);
    assert_eq!(two["round_ratio"], 1.0);
    w.call(
        Method::PUT,
        "/api/admin/carriers/2",
        Some(ADMIN),
        Some(json!({"name": "China Unicom", "protocol": "control-center",
            "base_url": "http://127.0.0.1:9", "rate_limit_per_sec": 2})),
    )
    .await
    .ok(StatusCode::OK);
    w.state.ops.budget.refresh().await.unwrap();
    let a = w.get("/api/admin/carriers/budget", VIEWER).await;
    let two = &a.ok(StatusCode::OK)["carriers"][1];
    assert_eq!(two["allowed_calls_per_sec"], 2.0);
    assert_eq!(two["round_ratio"], 1.625);
    assert_eq!(two["tasks"][0]["round_secs"], 487.5);
    assert_eq!(two["tasks"][0]["over"], true);
    assert_eq!(two["tasks"][1]["round_secs"], 5850.0);

    // Read-only.
    w.post("/api/admin/carriers/budget", ADMIN, json!({}))
        .await
        .problem(StatusCode::METHOD_NOT_ALLOWED);
    w.call(Method::GET, "/api/admin/carriers/budget", None, None)
        .await
        .problem(StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn carrier_round_ratio_rules_are_accepted_without_a_task_type() {
    let w = World::new().await;
    let rule = json!({"name": "carrier budget short", "metric": "carrier_round_ratio",
        "operator": ">", "threshold": "1", "window_secs": 60, "enabled": true,
        "webhook_url": null, "cooldown_secs": 600});
    let a = w
        .post("/api/admin/polling-alert-rules", ADMIN, rule.clone())
        .await;
    assert_eq!(a.ok(StatusCode::CREATED)["metric"], "carrier_round_ratio");
    let mut bad = rule;
    bad["task_type"] = json!("carddata");
    let a = w.post("/api/admin/polling-alert-rules", ADMIN, bad).await;
    let p = a.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(p["errors"][0]["pointer"], "/task_type");
}

#[tokio::test]
async fn the_openapi_document_describes_the_route_and_the_metric() {
    let w = World::new().await;
    let req = Request::builder()
        .uri("/api/openapi.json")
        .body(Body::empty())
        .unwrap();
    let a = w.send(req).await;
    let doc = a.ok(StatusCode::OK);
    let op = &doc["paths"]["/api/admin/carriers/budget"]["get"];
    assert_eq!(op["operationId"], "get_carriers_budget");
    assert_eq!(
        op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/BudgetReport"
    );
    let schemas = &doc["components"]["schemas"];
    for name in ["BudgetReport", "CarrierBudget", "TaskBudget"] {
        assert!(schemas[name].is_object(), "{name}");
    }
    let metrics = schemas["AlertMetric"]["enum"].as_array().unwrap();
    assert!(
        metrics.contains(&json!("carrier_round_ratio")),
        "{metrics:?}"
    );
}
