//! Carriers through the API: write-only credentials (never in an answer, the audit log or an
//! error), PUT keeping credentials, roles, validation, 404/409, health, connection tests.

use super::*;
use domain::{CarrierHealth, CarrierHealthState, CarrierId};
use polling_queue::CarrierHealthBoard;
use serde_json::json;

const PASSWORD: &str = "S3cr3t-onelink-PW";
const APPID: &str = "appid-S3cr3t-42";

fn onelink(id: i64, base_url: &str) -> Value {
    json!({"carrier_id": id, "name": "China Mobile", "protocol": "onelink",
        "base_url": base_url, "credentials": {"appid": APPID, "password": PASSWORD}})
}

/// Fails when a secret of the test appears anywhere in `v`.
fn assert_no_secret(what: &str, v: &Value) {
    let text = v.to_string();
    for secret in [PASSWORD, APPID] {
        assert!(!text.contains(secret), "{what} shows a credential: {text}");
    }
}

#[tokio::test]
async fn credentials_are_write_only() {
    let w = World::new().await;
    let a = w
        .post(
            "/api/admin/carriers",
            ADMIN,
            onelink(7, "http://127.0.0.1:9"),
        )
        .await;
    let created = a.ok(StatusCode::CREATED).clone();
    assert_no_secret("the create answer", &created);
    assert_eq!(created["carrier_id"], 7);
    assert_eq!(created["protocol"], "onelink");
    assert_eq!(created["credential_fields"], json!(["appid", "password"]));
    assert_eq!(created["enabled"], true);
    assert_eq!(created["limits"]["batch_size"], 100, "onelink's default");
    assert!(created["health"].is_null());

    let list = w.get("/api/admin/carriers", VIEWER).await;
    let list = list.ok(StatusCode::OK);
    assert_no_secret("the list", list);
    assert_eq!(list["total"], 1);
    let item = w.get("/api/admin/carriers/7", VIEWER).await;
    assert_no_secret("the item", item.ok(StatusCode::OK));

    // Nothing listens on port 9: the test answers 200 with what failed, without secrets.
    let test = w
        .call(
            Method::POST,
            "/api/admin/carriers/7/test",
            Some(ADMIN),
            None,
        )
        .await;
    let test = test.ok(StatusCode::OK).clone();
    assert_no_secret("the test answer", &test);
    assert_eq!(test["ok"], false, "{test}");
    assert_ne!(test["outcome"], "ok");
    assert!(test["elapsed_ms"].is_u64());

    // Validation errors never echo the values sent.
    let mut bad = onelink(8, "http://127.0.0.1:9");
    bad["credentials"]["token"] = json!(PASSWORD);
    let a = w.post("/api/admin/carriers", ADMIN, bad).await;
    let p = a.problem(StatusCode::UNPROCESSABLE_ENTITY).clone();
    assert_no_secret("a validation error", &p);
    assert_eq!(p["errors"][0]["pointer"], "/credentials");
    let mut bad = onelink(8, "http://127.0.0.1:9");
    bad["credentials"] = json!(PASSWORD);
    let a = w.post("/api/admin/carriers", ADMIN, bad).await;
    assert_no_secret("a type error", a.problem(StatusCode::UNPROCESSABLE_ENTITY));
    let mut bad = onelink(8, "http://127.0.0.1:9");
    bad["credentials"]["password"] = json!(5);
    let a = w.post("/api/admin/carriers", ADMIN, bad).await;
    assert_eq!(
        a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"][0]["pointer"],
        "/credentials/password"
    );
    assert_eq!(
        w.get("/api/admin/carriers", VIEWER).await.body["total"],
        1,
        "nothing written"
    );

    // PUT without credentials keeps them.
    let a = w
        .call(
            Method::PUT,
            "/api/admin/carriers/7",
            Some(ADMIN),
            Some(json!({"name": "renamed", "protocol": "onelink",
                "base_url": "http://127.0.0.1:9/v5", "batch_size": 5})),
        )
        .await;
    let updated = a.ok(StatusCode::OK).clone();
    assert_no_secret("the update answer", &updated);
    assert_eq!(updated["name"], "renamed");
    assert_eq!(updated["limits"]["batch_size"], 5);
    assert_eq!(updated["credential_fields"], json!(["appid", "password"]));
    // A field sent empty keeps its stored value; the other is replaced.
    let a = w
        .call(
            Method::PUT,
            "/api/admin/carriers/7",
            Some(ADMIN),
            Some(json!({"name": "renamed", "protocol": "onelink",
                "base_url": "http://127.0.0.1:9/v5",
                "credentials": {"appid": "new-app", "password": ""}})),
        )
        .await;
    a.ok(StatusCode::OK);
    let stored = w.stores.carriers.get(CarrierId(7)).await.unwrap().unwrap();
    assert_eq!(
        stored
            .credentials
            .get("password")
            .map(domain::Secret::expose),
        Some(PASSWORD)
    );
    assert_eq!(
        stored.credentials.get("appid").map(domain::Secret::expose),
        Some("new-app")
    );
    // Another protocol needs its own credentials.
    let a = w
        .call(
            Method::PUT,
            "/api/admin/carriers/7",
            Some(ADMIN),
            Some(json!({"name": "x", "protocol": "emnify", "base_url": "http://127.0.0.1:9"})),
        )
        .await;
    assert_eq!(
        a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"][0]["pointer"],
        "/credentials"
    );

    // The audit rows name the credential fields only.
    let audit = w.get("/api/admin/admin-audit-log", ADMIN).await;
    let audit = audit.ok(StatusCode::OK).clone();
    assert_no_secret("the audit log", &audit);
    let rows = audit["items"].as_array().unwrap();
    let create = rows
        .iter()
        .find(|r| r["route"] == "/api/admin/carriers" && r["status"] == 201)
        .unwrap();
    assert_eq!(
        create["summary"]["credential_fields"],
        json!(["appid", "password"])
    );
    assert_eq!(create["target"]["carrier_id"], 7);
    for row in w.audit().await {
        assert_no_secret(
            "an audit row",
            &json!([row.entry.summary, row.entry.target]),
        );
    }
}

#[tokio::test]
async fn roles_validation_conflicts_and_404() {
    let w = World::new().await;
    let body = onelink(3, "https://api.example.test/v5/ec");
    for key in [VIEWER, OPERATOR] {
        w.post("/api/admin/carriers", key, body.clone())
            .await
            .problem(StatusCode::FORBIDDEN);
        w.call(Method::POST, "/api/admin/carriers/3/test", Some(key), None)
            .await
            .problem(StatusCode::FORBIDDEN);
    }
    w.post("/api/admin/carriers", ADMIN, body.clone())
        .await
        .ok(StatusCode::CREATED);
    let a = w.post("/api/admin/carriers", ADMIN, body.clone()).await;
    assert_eq!(
        a.problem(StatusCode::CONFLICT)["errors"][0]["pointer"],
        "/carrier_id"
    );

    let mut bad = body.clone();
    bad["protocol"] = json!("smoke-signals");
    let a = w.post("/api/admin/carriers", ADMIN, bad).await;
    assert_eq!(
        a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"][0]["pointer"],
        "/protocol"
    );
    for (field, value, pointer) in [
        ("base_url", json!("ftp://x"), "/base_url"),
        ("name", json!(" "), "/name"),
        ("carrier_id", json!(0), "/carrier_id"),
        ("batch_size", json!(0), "/batch_size"),
        ("timeout_ms", json!(50), "/timeout_ms"),
    ] {
        let mut bad = body.clone();
        bad[field] = value;
        bad["carrier_id"] = if field == "carrier_id" {
            bad["carrier_id"].clone()
        } else {
            json!(4)
        };
        let a = w.post("/api/admin/carriers", ADMIN, bad).await;
        assert_eq!(
            a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"][0]["pointer"],
            pointer,
            "{field}"
        );
    }
    let mut missing = body.clone();
    missing.as_object_mut().unwrap().remove("credentials");
    missing["carrier_id"] = json!(4);
    w.post("/api/admin/carriers", ADMIN, missing)
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(w.get("/api/admin/carriers", VIEWER).await.body["total"], 1);

    w.get("/api/admin/carriers/99", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);
    w.call(
        Method::POST,
        "/api/admin/carriers/99/test",
        Some(ADMIN),
        None,
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    w.call(
        Method::PATCH,
        "/api/admin/carriers/99/status",
        Some(ADMIN),
        Some(json!({"enabled": false})),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    let mut put = body.clone();
    put.as_object_mut().unwrap().remove("carrier_id");
    w.call(
        Method::PUT,
        "/api/admin/carriers/99",
        Some(ADMIN),
        Some(put),
    )
    .await
    .problem(StatusCode::NOT_FOUND);

    let a = w
        .call(
            Method::PATCH,
            "/api/admin/carriers/3/status",
            Some(ADMIN),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["enabled"], false);
}

#[tokio::test]
async fn health_is_shown_and_a_disabled_carrier_can_be_tested() {
    let w = World::new().await;
    // gateway-sim speaks cmp-json at its root: the probe's unknown card is an answer.
    let a = w
        .post(
            "/api/admin/carriers",
            ADMIN,
            json!({"carrier_id": 5, "name": "sim", "protocol": "cmp-json",
                "base_url": w.sim.url(), "credentials": {}, "enabled": false}),
        )
        .await;
    assert_eq!(a.ok(StatusCode::CREATED)["credential_fields"], json!([]));
    let test = w
        .call(
            Method::POST,
            "/api/admin/carriers/5/test",
            Some(ADMIN),
            None,
        )
        .await;
    let test = test.ok(StatusCode::OK);
    assert_eq!(test["ok"], true, "{test}");
    assert_eq!(test["outcome"], "ok");

    let redis = w.env.redis.pool().await.unwrap();
    let board = CarrierHealthBoard::new(redis, Keys::new(w.env.redis.prefix.clone()));
    let now = chrono::Utc::now();
    board
        .publish(&CarrierHealth {
            carrier_id: CarrierId(5),
            state: CarrierHealthState::AuthFailed,
            last_ok_at: None,
            last_error_at: Some(now),
            last_error_kind: Some("auth_error".into()),
            last_error: Some("the platform refused the credentials".into()),
            calls_ok: 0,
            calls_failed: 2,
            updated_at: now,
        })
        .await
        .unwrap();
    let item = w.get("/api/admin/carriers/5", VIEWER).await;
    let health = &item.ok(StatusCode::OK)["health"];
    assert_eq!(health["state"], "auth_failed");
    assert_eq!(health["last_error_kind"], "auth_error");
    let list = w.get("/api/admin/carriers", VIEWER).await;
    assert_eq!(
        list.ok(StatusCode::OK)["items"][0]["health"]["calls_failed"],
        2
    );
}
