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
