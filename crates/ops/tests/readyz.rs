//! `/readyz` on the real router, against real PostgreSQL and Redis: 200 only when every part
//! answers, else 503 with a JSON body naming the part that is not ready; `/healthz` stays 200.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use fred::prelude::*;
use http_body_util::BodyExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use test_support::TestEnv;
use tower::ServiceExt;

async fn get(router: &axum::Router, path: &str) -> anyhow::Result<(StatusCode, String)> {
    let response = router
        .clone()
        .oneshot(Request::get(path).body(Body::empty())?)
        .await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8(body.to_vec())?))
}

#[tokio::test]
async fn readyz_is_503_naming_the_part_until_every_part_is_ready() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let redis = env.redis.pool().await?;
    let initialised = Arc::new(AtomicBool::new(false));
    let flag = initialised.clone();
    let readiness =
        ops::Readiness::new(env.db.conn.clone(), redis).with_probe("queues", move || {
            let ready = flag.load(Ordering::SeqCst);
            async move {
                if ready {
                    Ok(())
                } else {
                    Err("reinitialising: 3 of 10 cards processed".to_owned())
                }
            }
        });
    let router = ops::health_router(readiness, ops::install_metrics()?);

    let (status, body) = get(&router, "/readyz").await?;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let json: serde_json::Value = serde_json::from_str(&body)?;
    assert_eq!(
        json,
        serde_json::json!({
            "ready": false,
            "checks": {
                "postgres": "ok",
                "redis": "ok",
                "queues": "reinitialising: 3 of 10 cards processed",
            }
        })
    );
    let (status, body) = get(&router, "/healthz").await?;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"));

    initialised.store(true, Ordering::SeqCst);
    let (status, body) = get(&router, "/readyz").await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body)?;
    assert_eq!(json["ready"], true);
    assert_eq!(json["checks"]["queues"], "ok");
    Ok(())
}

#[tokio::test]
async fn readyz_is_503_when_redis_does_not_answer() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let redis = env.redis.pool().await?;
    redis.quit().await?;
    let readiness = ops::Readiness::new(env.db.conn.clone(), redis);
    let router = ops::health_router(readiness, ops::install_metrics()?);
    let (status, body) = get(&router, "/readyz").await?;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body)?;
    assert_eq!(json["checks"]["postgres"], "ok");
    assert_ne!(json["checks"]["redis"], "ok");
    Ok(())
}
