//! Input hardening: every query parameter and body field with a format or a range is checked
//! and answered with a 422 naming it; nothing is written by a refused request.

use super::*;
use serde_json::json;

fn pointers(a: &Answer) -> Vec<String> {
    a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn card_filters_are_checked_and_name_the_parameter() {
    let w = World::new().await;
    card(&w, 1, json!({})).await;
    let list = |q: String| {
        let w = &w;
        async move { w.get(&format!("/api/admin/cards?{q}"), VIEWER).await }
    };
    for (query, pointer) in [
        ("iccid=%25".to_owned(), "/iccid"),
        ("iccid=8986_".to_owned(), "/iccid"),
        (format!("iccid={}", "8".repeat(23)), "/iccid"),
        ("msisdn=861380000x".to_owned(), "/msisdn"),
        (format!("msisdn={}", "1".repeat(21)), "/msisdn"),
        ("device_id=0".to_owned(), "/device_id"),
        ("carrier_id=-3".to_owned(), "/carrier_id"),
        ("page_size=501".to_owned(), "/page_size"),
        ("page=0".to_owned(), "/page"),
    ] {
        let a = list(query.clone()).await;
        assert_eq!(pointers(&a), vec![pointer.to_owned()], "{query}");
    }
    // Every bad parameter at once, each named.
    let a = list("iccid=a-b&msisdn=x&device_id=0&carrier_id=0".to_owned()).await;
    assert_eq!(
        pointers(&a),
        ["/iccid", "/msisdn", "/device_id", "/carrier_id"]
    );
    // Values of the wrong type are 400/422 problems too, never a 5xx.
    for query in [
        "device_id=abc",
        "network_status=7",
        "page=-1",
        "enable_polling=maybe",
    ] {
        let a = list(query.to_owned()).await;
        assert!(a.status.is_client_error(), "{query}: {}", a.status);
        assert_eq!(a.content_type, "application/problem+json", "{query}");
    }
    // Good filters still work.
    let a = list("iccid=8986&msisdn=%2B86138".to_owned()).await;
    assert_eq!(a.ok(StatusCode::OK)["total"], 0);
    let a = list("iccid=8986".to_owned()).await;
    assert_eq!(a.ok(StatusCode::OK)["total"], 1);
}

#[tokio::test]
async fn iccid_and_msisdn_formats_are_checked_on_create_and_import() {
    let w = World::new().await;
    for bad in [
        "1986000000000000001",     // not the telecom prefix 89
        "8986000000000000",        // 16 characters
        "89860000000000000000001", // 23 characters
        "8986 000000000000000",    // a space inside
    ] {
        let a = w
            .post(
                "/api/admin/cards",
                ADMIN,
                json!({"iccid": bad, "carrier_id": 1}),
            )
            .await;
        assert_eq!(pointers(&a), ["/iccid"], "{bad}");
    }
    let a = w
        .post(
            "/api/admin/cards",
            ADMIN,
            json!({"iccid": iccid(1), "carrier_id": 1, "msisdn": "+86 138"}),
        )
        .await;
    assert_eq!(pointers(&a), ["/msisdn"]);
    // An ICCID with letters in the issuer part, 19 and 22 characters: accepted.
    for good in ["898600A0000000000F1", "8986000000000000000012"] {
        w.post(
            "/api/admin/cards",
            ADMIN,
            json!({"iccid": good, "carrier_id": 1, "msisdn": "+8613800000001"}),
        )
        .await
        .ok(StatusCode::CREATED);
    }
    // An import with one bad row is refused whole, the row named.
    let rows = json!({"cards": [
        {"iccid": iccid(10), "carrier_id": 1},
        {"iccid": "89860000000000000000001", "carrier_id": 1},
        {"iccid": iccid(12), "carrier_id": 1, "msisdn": "12ab"},
    ]});
    let a = w.post("/api/admin/cards/import", ADMIN, rows).await;
    assert_eq!(pointers(&a), ["/cards/1/iccid", "/cards/2/msisdn"]);
    assert_eq!(w.stores.cards.count().await.unwrap(), 2);
}

#[tokio::test]
async fn webhook_urls_must_be_http_or_https_with_a_host() {
    let w = World::new().await;
    let rule = |url: &str| {
        json!({"name": "backlog", "metric": "due_backlog", "task_type": "carddata",
            "operator": ">", "threshold": "100", "window_secs": 300, "enabled": true,
            "webhook_url": url, "cooldown_secs": 600})
    };
    let long = format!("https://hooks.example/{}", "a".repeat(512));
    for bad in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "gopher://hooks.example/",
        "http://",
        "hooks.example/no-scheme",
        long.as_str(),
    ] {
        let a = w
            .post("/api/admin/polling-alert-rules", ADMIN, rule(bad))
            .await;
        assert_eq!(pointers(&a), ["/webhook_url"], "{bad}");
    }
    w.post(
        "/api/admin/polling-alert-rules",
        ADMIN,
        rule("http://127.0.0.1:9/hook"),
    )
    .await
    .ok(StatusCode::CREATED);
}

/// JSON Schema's integers include whole numbers written as floats: `1.0` is taken as `1`, a
/// fraction is still refused naming the field, and nothing is written then.
#[tokio::test]
async fn whole_floats_are_integers_and_fractions_are_refused() {
    let w = World::new().await;
    let id = card(&w, 1, json!({"carrier_id": 1.0, "status": 3e0})).await;
    let a = w.get(&format!("/api/admin/cards/{id}"), VIEWER).await;
    let body = a.ok(StatusCode::OK);
    assert_eq!(
        (body["carrier_id"].as_i64(), body["status"].as_i64()),
        (Some(1), Some(3))
    );
    let a = w
        .post(
            "/api/admin/cards",
            ADMIN,
            json!({"iccid": iccid(2), "carrier_id": 1.5, "status": 2.0}),
        )
        .await;
    assert_eq!(pointers(&a), ["/carrier_id"]);
    assert_eq!(w.stores.cards.count().await.unwrap(), 1);
}
