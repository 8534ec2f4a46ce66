//! Manual trigger through the API.

use super::*;
use serde_json::json;

#[tokio::test]
async fn single_batch_filter_status_cancel_logs() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let a = card(&w, 1, json!({})).await;
    let b = card(&w, 2, json!({"carrier_id": 2})).await;
    w.post(
        "/api/admin/polling-manual-trigger/single",
        VIEWER,
        json!({"card_id": a}),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    let r = w
        .post(
            "/api/admin/polling-manual-trigger/single",
            OPERATOR,
            json!({"card_id": a, "task_types": ["carddata"]}),
        )
        .await;
    assert_eq!(r.ok(StatusCode::OK)["cards"], 1);
    assert!(
        w.inspector
            .in_manual(domain::CardId(a), domain::TaskType::Carddata)
            .await
            .unwrap()
    );
    w.post(
        "/api/admin/polling-manual-trigger/single",
        OPERATOR,
        json!({"card_id": 999}),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    w.post(
        "/api/admin/polling-manual-trigger/single",
        OPERATOR,
        json!({"card_id": a, "task_types": ["bogus"]}),
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let r = w
        .post(
            "/api/admin/polling-manual-trigger/batch",
            OPERATOR,
            json!({"card_ids": [a, b, 999], "task_types": ["package"]}),
        )
        .await;
    let r = r.ok(StatusCode::OK);
    assert_eq!(r["cards"], 2);
    assert_eq!(r["missing"], json!([999]));
    let too_many: Vec<i64> = (1..=10_001).collect();
    w.post(
        "/api/admin/polling-manual-trigger/batch",
        OPERATOR,
        json!({"card_ids": too_many}),
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let r = w
        .post(
            "/api/admin/polling-manual-trigger/by-filter",
            OPERATOR,
            json!({"carrier_id": 2, "task_types": ["realname"]}),
        )
        .await;
    assert_eq!(r.ok(StatusCode::OK)["cards"], 1);
    w.post(
        "/api/admin/polling-manual-trigger/by-filter",
        OPERATOR,
        json!({}),
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let s = w
        .get("/api/admin/polling-manual-trigger/status", VIEWER)
        .await;
    let s = s.ok(StatusCode::OK).clone();
    let waiting = |t: &str| {
        s.as_array()
            .unwrap()
            .iter()
            .find(|x| x["task_type"] == t)
            .unwrap()["waiting"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        (waiting("carddata"), waiting("package"), waiting("realname")),
        (1, 2, 1)
    );
    let c = w
        .post(
            "/api/admin/polling-manual-trigger/cancel",
            OPERATOR,
            json!({"task_type": "package"}),
        )
        .await;
    assert_eq!(c.ok(StatusCode::OK)["cleared"][0]["waiting"], 2);
    assert_eq!(
        w.queue.manual_len(domain::TaskType::Package).await.unwrap(),
        0
    );
    let l = w
        .get("/api/admin/polling-manual-trigger/logs", VIEWER)
        .await;
    let l = l.ok(StatusCode::OK);
    assert_eq!(l["total"], 3);
    assert_eq!(l["items"][0]["who"], "operator");
}
