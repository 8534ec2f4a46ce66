//! Monitoring and concurrency through the API: the queue-depth scenarios (summed shards, one
//! shard unreadable), roles, 404s, 422s.

use super::*;
use fred::interfaces::{KeysInterface, SortedSetsInterface};
use serde_json::Value;
use serde_json::json;

/// Fills the carddata queue of `shard` with `n` members due in an hour.
async fn fill(w: &World, shard: u32, n: u64) {
    let pool = w.env.redis.pool().await.unwrap();
    let key = Keys::new(w.env.redis.prefix.clone()).shard_queue(shard, domain::TaskType::Carddata);
    let score = (chrono::Utc::now().timestamp() + 3600) as f64;
    let members: Vec<(f64, String)> = (0..n)
        .map(|i| (score, (u64::from(shard) + 16 * i).to_string()))
        .collect();
    let _: i64 = pool
        .zadd(key, None, None, false, false, members)
        .await
        .unwrap();
}

fn carddata(body: &Value) -> &Value {
    body["task_types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_type"] == "carddata")
        .unwrap()
}

#[tokio::test]
async fn polling_stats_sums_the_sixteen_shards_and_skips_an_unreadable_one() {
    let w = World::new().await;
    for shard in 0..16 {
        fill(&w, shard, u64::from(shard + 1) * 100).await;
    }
    for key in [ADMIN, OPERATOR, VIEWER] {
        let a = w.get("/api/admin/polling-stats", key).await;
        assert_eq!(carddata(a.ok(StatusCode::OK))["total_depth"], 13_600);
    }
    let a = w.get("/api/admin/polling-stats/queues", VIEWER).await;
    let body = a.ok(StatusCode::OK);
    let cd = body
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_type"] == "carddata")
        .unwrap();
    assert_eq!(cd["shards"][4]["depth"], 500);
    assert_eq!(cd["summary"]["depth"], 13_600);

    // Shard 7 (800 entries) unreadable: the other 15 and the seed's warning.
    let pool = w.env.redis.pool().await.unwrap();
    let key = Keys::new(w.env.redis.prefix.clone()).shard_queue(7, domain::TaskType::Carddata);
    let _: i64 = pool.del(key.as_str()).await.unwrap();
    let _: () = pool
        .set(key.as_str(), "x", None, None, false)
        .await
        .unwrap();
    let a = w.get("/api/admin/polling-stats", VIEWER).await;
    let body = a.ok(StatusCode::OK);
    assert_eq!(carddata(body)["total_depth"], 13_600 - 800);
    assert_eq!(carddata(body)["missing_shards"], json!([7]));
    assert!(
        body["warnings"]
            .as_array()
            .unwrap()
            .contains(&json!("分片 7 队列深度查询失败"))
    );

    let a = w.get("/api/admin/polling-stats/tasks", VIEWER).await;
    assert_eq!(a.ok(StatusCode::OK).as_array().unwrap().len(), 4);
    let a = w
        .get("/api/admin/polling-stats/init-progress", VIEWER)
        .await;
    assert_eq!(a.ok(StatusCode::OK)["status"], "never_run");
    let a = w
        .get(
            "/api/admin/polling-stats/history?scope=carddata&range=24h",
            VIEWER,
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["resolution"], "minute");
    w.get(
        "/api/admin/polling-stats/history?scope=nope&range=24h",
        VIEWER,
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
    w.call(Method::GET, "/api/admin/polling-stats", None, None)
        .await
        .problem(StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn concurrency_routes_roles_validation_and_404() {
    let w = World::new().await;
    let a = w.get("/api/admin/polling-concurrency", VIEWER).await;
    let list = a.ok(StatusCode::OK).as_array().unwrap().clone();
    assert_eq!(list.len(), 4);
    // The API's default is the worker's: CMP_WORKER_POOL_CARDDATA (256) x 8 nodes.
    let cd = list.iter().find(|c| c["task_type"] == "carddata").unwrap();
    assert_eq!(cd["max"], 2048);
    assert_eq!(cd["default_max"], 2048);
    let a = w
        .get("/api/admin/polling-concurrency/carddata", OPERATOR)
        .await;
    assert_eq!(a.ok(StatusCode::OK)["current"], 0);
    w.get("/api/admin/polling-concurrency/nope", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);

    let put = |key: &'static str, body: Value| {
        w.call(
            Method::PUT,
            "/api/admin/polling-concurrency/carddata",
            Some(key),
            Some(body),
        )
    };
    put(VIEWER, json!({"max": 10}))
        .await
        .problem(StatusCode::FORBIDDEN);
    put(OPERATOR, json!({"max": 10}))
        .await
        .problem(StatusCode::FORBIDDEN);
    let bad = put(ADMIN, json!({"max": 0})).await;
    assert_eq!(
        bad.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"][0]["pointer"],
        "/max"
    );
    put(ADMIN, json!({"max": "ten"}))
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let a = put(ADMIN, json!({"max": 10})).await;
    assert_eq!(a.ok(StatusCode::OK)["max"], 10);
    w.call(
        Method::PUT,
        "/api/admin/polling-concurrency/nope",
        Some(ADMIN),
        Some(json!({"max": 10})),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    w.post("/api/admin/polling-concurrency/reset", VIEWER, json!({}))
        .await
        .problem(StatusCode::FORBIDDEN);
    let a = w
        .post(
            "/api/admin/polling-concurrency/reset",
            ADMIN,
            json!({"task_types": ["carddata"], "clear_max": true}),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)[0]["max"], 2048);
    // Both changes are in the audit log.
    let routes: Vec<String> = w
        .audit()
        .await
        .into_iter()
        .filter(|r| r.entry.status == 200)
        .map(|r| r.entry.route)
        .collect();
    assert!(
        routes.contains(&"/api/admin/polling-concurrency/{task_type}".to_owned()),
        "{routes:?}"
    );
    assert!(routes.contains(&"/api/admin/polling-concurrency/reset".to_owned()));
}
