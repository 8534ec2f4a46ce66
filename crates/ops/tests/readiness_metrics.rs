//! `/metrics` asks the parts of `/readyz` and exports each as `cmp_readiness_check{check}` (1
//! ready, 0 not), with the process's resident size, so that Prometheus alerts on PostgreSQL or
//! Redis not answering (deploy/prometheus/alerts.yml). Its own test binary: the gauges are
//! process-wide, and no other test may set them between a scrape's update and its render.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use fred::prelude::*;
use http_body_util::BodyExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use test_support::TestEnv;
use tower::ServiceExt;

async fn metrics_text(router: &axum::Router) -> anyhow::Result<String> {
    let response = router
        .clone()
        .oneshot(Request::get("/metrics").body(Body::empty())?)
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await?.to_bytes();
    Ok(String::from_utf8(body.to_vec())?)
}

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[tokio::test]
async fn metrics_export_each_readiness_part_and_the_resident_size() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let metrics = ops::install_metrics()?;

    let initialised = Arc::new(AtomicBool::new(false));
    let flag = initialised.clone();
    let readiness = ops::Readiness::new(env.db.conn.clone(), env.redis.pool().await?).with_probe(
        "queues",
        move || {
            let ready = flag.load(Ordering::SeqCst);
            async move {
                if ready {
                    Ok(())
                } else {
                    Err("reinitialising".to_owned())
                }
            }
        },
    );
    let router = ops::health_router(readiness, metrics.clone());
    let text = metrics_text(&router).await?;
    assert_eq!(
        value(&text, r#"cmp_readiness_check{check="postgres"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&text, r#"cmp_readiness_check{check="redis"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&text, r#"cmp_readiness_check{check="queues"}"#),
        Some(0.0),
        "{text}"
    );
    if cfg!(target_os = "linux") {
        let rss = value(&text, "cmp_process_resident_memory_bytes").unwrap_or(0.0);
        assert!(rss > 1e6, "resident size {rss} in:\n{text}");
    }
    initialised.store(true, Ordering::SeqCst);
    let text = metrics_text(&router).await?;
    assert_eq!(
        value(&text, r#"cmp_readiness_check{check="queues"}"#),
        Some(1.0),
        "{text}"
    );

    // Redis gone: its part turns 0 at the next scrape, PostgreSQL's stays 1.
    let redis = env.redis.pool().await?;
    redis.quit().await?;
    let router = ops::health_router(ops::Readiness::new(env.db.conn.clone(), redis), metrics);
    let text = metrics_text(&router).await?;
    assert_eq!(
        value(&text, r#"cmp_readiness_check{check="redis"}"#),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        value(&text, r#"cmp_readiness_check{check="postgres"}"#),
        Some(1.0),
        "{text}"
    );
    Ok(())
}
