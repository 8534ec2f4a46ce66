//! The dashboard: the page and its assets, served without a key, with their content types and
//! nothing fetched from outside; `/ui/session` answers the key's role.

use super::*;

async fn fetch(w: &World, uri: &str) -> (StatusCode, String, String) {
    let req = Request::builder().uri(uri).body(Body::empty()).unwrap();
    let response = w.router.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let ct = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, ct, String::from_utf8(bytes.to_vec()).unwrap())
}

/// Every absolute URL in `text` (the dashboard must name none).
fn absolute_urls(text: &str) -> Vec<&str> {
    text.match_indices("http://")
        .chain(text.match_indices("https://"))
        .map(|(i, _)| &text[i..(i + 40).min(text.len())])
        .collect()
}

#[tokio::test]
async fn the_dashboard_and_its_assets_are_served_without_a_key() {
    let w = World::new().await;
    let (status, ct, page) = fetch(&w, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ct, "text/html; charset=utf-8");
    assert!(page.contains("<html") && page.contains("/ui/app.js"));
    assert!(
        absolute_urls(&page).is_empty(),
        "{:?}",
        absolute_urls(&page)
    );

    let mut assets = 0;
    for src in page.split("\"/ui/").skip(1) {
        let name = src.split('"').next().unwrap();
        let (status, ct, body) = fetch(&w, &format!("/ui/{name}")).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let want = if name.ends_with(".css") {
            "text/css; charset=utf-8"
        } else {
            "text/javascript; charset=utf-8"
        };
        assert_eq!(ct, want, "{name}");
        assert!(!body.is_empty(), "{name}");
        assert!(
            absolute_urls(&body).is_empty(),
            "{name}: {:?}",
            absolute_urls(&body)
        );
        assets += 1;
    }
    assert!(assets >= 5, "only {assets} assets linked");

    let (status, ct, _) = fetch(&w, "/ui/nope.js").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(ct, "application/problem+json");
}

#[tokio::test]
async fn the_session_names_the_role_of_the_key() {
    let w = World::new().await;
    let a = w.get("/ui/session", VIEWER).await;
    assert_eq!(a.ok(StatusCode::OK)["role"], "viewer");
    let a = w.get("/ui/session", ADMIN).await;
    assert_eq!(a.ok(StatusCode::OK)["role"], "admin");
    // The zone every date of the pages is shown in: CMP_TIMEZONE (its default here).
    assert_eq!(a.ok(StatusCode::OK)["timezone"], "Asia/Shanghai");
    w.get("/ui/session", "cmp_nope")
        .await
        .problem(StatusCode::UNAUTHORIZED);
}

/// A request with headers and an optional JSON body; the answer, its headers and its JSON.
async fn raw(
    w: &World,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(serde_json::to_vec(&v).unwrap())
        }
        None => Body::empty(),
    };
    let response = w
        .router
        .clone()
        .oneshot(req.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, headers, json)
}

/// `POST /ui/session` with `key` (and extra request headers).
async fn sign_in(
    w: &World,
    key: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let body = serde_json::json!({ "key": key });
    raw(w, Method::POST, "/ui/session", headers, Some(body)).await
}

/// A `GET` with the session cookie `cookie`: its status.
async fn read_with(w: &World, uri: &str, cookie: &str) -> StatusCode {
    raw(w, Method::GET, uri, &[("cookie", cookie)], None)
        .await
        .0
}

/// The `cmp_session=...` pair of a `Set-Cookie` answer.
fn cookie_of(headers: &axum::http::HeaderMap) -> String {
    let set = headers[header::SET_COOKIE].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_key_is_exchanged_for_an_http_only_session_cookie_with_a_csrf_token() {
    let w = World::new().await;
    // A bad key gets no session.
    let (status, headers, _) = sign_in(&w, "cmp_nope", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers.get(header::SET_COOKIE).is_none());
    let (status, _, _) = raw(
        &w,
        Method::POST,
        "/ui/session",
        &[],
        Some(serde_json::json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    let (status, headers, me) = sign_in(&w, OPERATOR, &[("x-forwarded-proto", "https")]).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["role"], "operator");
    let csrf = me["csrf"].as_str().unwrap().to_owned();
    let set = headers[header::SET_COOKIE].to_str().unwrap().to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.contains(OPERATOR), "the cookie is not the key");
    let cookie = cookie_of(&headers);
    let token = cookie.strip_prefix("cmp_session=").unwrap().to_owned();
    // The session lives in Redis under the hash of the cookie, never the cookie itself.
    let pool = w.env.redis.pool().await.unwrap();
    let keys = test_support::keys_matching(
        pool.next(),
        &format!("{}polling:ui:session:*", w.env.redis.prefix),
    )
    .await
    .unwrap();
    assert_eq!(keys.len(), 1);
    assert!(!keys[0].contains(&token));

    // Reads with the cookie.
    let (status, _, me) = raw(&w, Method::GET, "/ui/session", &[("cookie", &cookie)], None).await;
    assert_eq!(
        (status, me["csrf"].as_str()),
        (StatusCode::OK, Some(csrf.as_str()))
    );
    let status = read_with(&w, "/api/admin/cards", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    // A write needs the token too; with it, the role decides as with the key.
    let id = card(&w, 1, serde_json::json!({})).await;
    let trigger = serde_json::json!({"card_id": id});
    let uri = "/api/admin/polling-manual-trigger/single";
    let (status, _, p) = raw(
        &w,
        Method::POST,
        uri,
        &[("cookie", &cookie)],
        Some(trigger.clone()),
    )
    .await;
    assert_eq!(
        (status, p["type"].as_str()),
        (StatusCode::FORBIDDEN, Some("/problems/csrf"))
    );
    let wrong = [("cookie", cookie.as_str()), ("x-csrf-token", "nope")];
    let (status, _, _) = raw(&w, Method::POST, uri, &wrong, Some(trigger.clone())).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let right = [("cookie", cookie.as_str()), ("x-csrf-token", csrf.as_str())];
    let (status, _, _) = raw(&w, Method::POST, uri, &right, Some(trigger.clone())).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = raw(
        &w,
        Method::POST,
        "/api/admin/polling-configs",
        &right,
        Some(serde_json::json!({})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "an operator's session may not edit configs"
    );
    // The audit row names the key behind the session.
    let audit = w.audit().await;
    let row = audit
        .iter()
        .find(|r| r.entry.route == uri && r.entry.status == 200)
        .expect("the write is audited");
    assert_eq!(row.entry.key_name.as_deref(), Some("operator"));

    // Sign-out ends it on the server: the same cookie is refused afterwards.
    let (status, headers, _) = raw(
        &w,
        Method::DELETE,
        "/ui/session",
        &[("cookie", &cookie)],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(
        headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let status = read_with(&w, "/api/admin/cards", &cookie).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let status = read_with(&w, "/ui/session", &cookie).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_revoked_key_ends_its_sessions() {
    let w = World::new().await;
    let key = w
        .stores
        .api_keys
        .insert("short", ApiKeyRole::Viewer, &hash_key("cmp_short_lived"))
        .await
        .unwrap();
    let (status, headers, _) = sign_in(&w, "cmp_short_lived", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let cookie = cookie_of(&headers);
    w.stores.api_keys.revoke(key.id).await.unwrap();
    // Within the key cache's TTL (5 s) the session stops working.
    let deadline = std::time::Instant::now() + crate::auth::KEY_CACHE_TTL * 3;
    loop {
        let status = read_with(&w, "/api/admin/cards", &cookie).await;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still {status}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn assets_carry_an_etag_and_a_csp_without_inline_scripts() {
    let w = World::new().await;
    for uri in ["/", "/ui/core.js", "/ui/style.css"] {
        let (status, headers, _) = raw(&w, Method::GET, uri, &[], None).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        let etag = headers[header::ETAG].to_str().unwrap().to_owned();
        let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(
            csp.contains("default-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        let (status, headers, _) =
            raw(&w, Method::GET, uri, &[("if-none-match", &etag)], None).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{uri}");
        assert_eq!(headers[header::ETAG].to_str().unwrap(), etag);
        let (status, _, _) = raw(
            &w,
            Method::GET,
            uri,
            &[("if-none-match", "\"other\"")],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{uri}");
    }
    // The page runs no inline script: every <script> has a src.
    let (_, _, page) = fetch(&w, "/").await;
    assert_eq!(
        page.matches("<script").count(),
        page.matches("<script src=").count()
    );
}
