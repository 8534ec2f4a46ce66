//! Auth, roles, problem+json for every kind of refusal, the documents.

use super::*;

#[tokio::test]
async fn missing_bad_and_revoked_keys_are_401_problems() {
    let w = World::new().await;
    let a = w
        .call(Method::GET, "/api/admin/polling-configs", None, None)
        .await;
    a.problem(StatusCode::UNAUTHORIZED);
    let a = w.get("/api/admin/polling-configs", "cmp_nope").await;
    a.problem(StatusCode::UNAUTHORIZED);
    let req = Request::builder()
        .uri("/api/admin/polling-configs")
        .header(header::AUTHORIZATION, "Basic abc")
        .body(Body::empty())
        .unwrap();
    w.send(req).await.problem(StatusCode::UNAUTHORIZED);
    // A refused write is audited with its status.
    w.call(
        Method::POST,
        "/api/admin/polling-configs",
        None,
        Some(serde_json::json!({})),
    )
    .await
    .problem(StatusCode::UNAUTHORIZED);
    let audit = w.audit().await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.status, 401);
    assert_eq!(audit[0].entry.route, "/api/admin/polling-configs");
}

#[tokio::test]
async fn a_revoked_key_stops_working_within_the_cache_ttl() {
    let w = World::new().await;
    let auth = crate::auth::Authenticator::with_ttl(
        w.stores.api_keys.clone(),
        std::time::Duration::from_millis(200),
    );
    let key = w
        .stores
        .api_keys
        .insert("temp", ApiKeyRole::Viewer, &hash_key("cmp_temp"))
        .await
        .unwrap();
    let mut headers = axum::http::HeaderMap::new();
    headers.insert(header::AUTHORIZATION, "Bearer cmp_temp".parse().unwrap());
    assert!(auth.authenticate(&headers).await.is_ok());
    w.stores.api_keys.revoke(key.id).await.unwrap();
    // Still cached right after the revocation...
    assert!(auth.authenticate(&headers).await.is_ok());
    // ...and refused once the entry is older than the TTL.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        if auth.authenticate(&headers).await.is_err() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "revocation not seen");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems() {
    let w = World::new().await;
    w.get("/api/admin/nope", ADMIN)
        .await
        .problem(StatusCode::NOT_FOUND);
    w.get("/nope", ADMIN).await.problem(StatusCode::NOT_FOUND);
    let a = w
        .call(Method::PUT, "/api/admin/polling-configs", Some(ADMIN), None)
        .await;
    a.problem(StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn bad_pages_are_422() {
    let w = World::new().await;
    for q in ["page_size=0", "page_size=501", "page=0", "page=abc"] {
        let a = w
            .get(&format!("/api/admin/polling-configs?{q}"), VIEWER)
            .await;
        a.problem(StatusCode::UNPROCESSABLE_ENTITY);
    }
    let a = w
        .get("/api/admin/polling-configs?page=2&page_size=5", VIEWER)
        .await;
    let body = a.ok(StatusCode::OK);
    assert_eq!(body["page"], 2);
    assert_eq!(body["page_size"], 5);
    assert_eq!(body["total"], 0);
}

#[tokio::test]
async fn malformed_json_400_wrong_type_422_no_content_type_415_oversize_413() {
    let w = World::new().await;
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/admin/polling-configs")
        .header(header::AUTHORIZATION, format!("Bearer {ADMIN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{\"name\": "))
        .unwrap();
    w.send(req).await.problem(StatusCode::BAD_REQUEST);
    let a = w
        .post(
            "/api/admin/polling-configs",
            ADMIN,
            serde_json::json!({"name": 5}),
        )
        .await;
    let body = a.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["errors"][0]["pointer"], "/name", "{body}");
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/admin/polling-configs")
        .header(header::AUTHORIZATION, format!("Bearer {ADMIN}"))
        .body(Body::from("{}"))
        .unwrap();
    w.send(req)
        .await
        .problem(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let big = "x".repeat(crate::guard::BODY_LIMIT + 10);
    let a = w
        .post(
            "/api/admin/polling-configs",
            ADMIN,
            serde_json::json!({"name": big}),
        )
        .await;
    a.problem(StatusCode::PAYLOAD_TOO_LARGE);
    assert!(w.stores.configs.list_all().await.unwrap().is_empty());
}

#[tokio::test]
async fn openapi_document_and_docs_page_are_served() {
    let w = World::new().await;
    let req = Request::builder()
        .uri("/api/openapi.json")
        .body(Body::empty())
        .unwrap();
    let a = w.send(req).await;
    let doc = a.ok(StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    let paths = doc["paths"].as_object().unwrap();
    assert!(
        paths.contains_key("/api/admin/polling-configs/{id}"),
        "{:?}",
        paths.keys()
    );
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            assert!(
                op["responses"]["401"].is_object(),
                "{method} {path} lacks 401"
            );
        }
    }
    let req = Request::builder()
        .uri("/api/docs/")
        .body(Body::empty())
        .unwrap();
    let a = w.send(req).await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.content_type.starts_with("text/html"));
}

/// Every operation of the document: 401 without a key; 403 for a role that may not (viewer:
/// every write; operator: every write but its own, and the audit log); never 401/403 for a role
/// that may. Refused writes change nothing but the audit log.
#[tokio::test]
async fn every_route_checks_keys_and_roles() {
    let w = World::new().await;
    let config = config_everything(&w, 3600).await;
    let card_id = card(&w, 1, serde_json::json!({})).await;
    let doc = w
        .send(
            Request::builder()
                .uri("/api/openapi.json")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .body;
    let before = (
        w.stores.cards.count().await.unwrap(),
        w.stores.configs.list_all().await.unwrap(),
        w.stores.cards.get(domain::CardId(card_id)).await.unwrap(),
    );
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let uri = path
            .replace("{asset_type}", "card")
            .replace("{card_id}", &card_id.to_string())
            .replace("{carrier_id}", "1")
            .replace(
                "{id}",
                &if path.contains("polling-configs") {
                    config
                } else {
                    card_id
                }
                .to_string(),
            )
            .replace("{task_type}", "carddata")
            .replace("{job_id}", "ffff");
        let Some(route) = path.strip_prefix(crate::guard::PREFIX) else {
            // The carriers' push streams: no API key, the carrier's own Basic auth (streams.rs).
            assert_eq!(path, "/api/carriers/{carrier_id}/stream");
            continue;
        };
        for method in item.as_object().unwrap().keys() {
            let method: Method = method.to_uppercase().parse().unwrap();
            let write = method != Method::GET;
            let body = write.then(|| serde_json::json!({}));
            w.call(method.clone(), &uri, None, body.clone())
                .await
                .problem(StatusCode::UNAUTHORIZED);
            for (key, role) in [
                (VIEWER, ApiKeyRole::Viewer),
                (OPERATOR, ApiKeyRole::Operator),
            ] {
                let may = crate::auth::allowed(role, &method, route);
                if may && write {
                    // Allowed writes are exercised by the route tests; here only refusals run.
                    continue;
                }
                let a = w.call(method.clone(), &uri, Some(key), body.clone()).await;
                if may {
                    assert!(
                        a.status != StatusCode::UNAUTHORIZED && a.status != StatusCode::FORBIDDEN,
                        "{role} {method} {uri}: {}",
                        a.status
                    );
                } else {
                    a.problem(StatusCode::FORBIDDEN);
                }
            }
            checked += 1;
        }
    }
    // 35 of part 1, 23 of part 2 (monitoring, concurrency, alerts, cleanup), the history and
    // a card's month of usage; the carriers (6) and their budget figures; a background
    // import's job.
    assert_eq!(checked, 35 + 25 + 8);
    let after = (
        w.stores.cards.count().await.unwrap(),
        w.stores.configs.list_all().await.unwrap(),
        w.stores.cards.get(domain::CardId(card_id)).await.unwrap(),
    );
    assert_eq!(before, after, "a refused write changed something");
    let refused = w
        .audit()
        .await
        .iter()
        .filter(|r| r.entry.status == 401 || r.entry.status == 403)
        .count();
    assert!(refused >= 27 * 2, "refused writes audited: {refused}");
}
