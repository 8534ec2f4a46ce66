//! The alert evaluator against a real local webhook receiver (axum on port 0): a due-backlog
//! rule fires once, is not repeated within the cool-down, resolves once; the signature
//! verifies; a receiver failing twice gets the alert on the third try; a dead receiver never
//! stalls the evaluator.

mod common;

use admin::alerts::AlertService;
use admin::webhook::{SIGNATURE_HEADER, WebhookBody, WebhookSettings, verify};
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use common::{World, wait_for};
use domain::store::Page;
use domain::{AlertMetric, AlertOperator, AlertRuleInput, TaskType};
use rust_decimal_macros::dec;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the receiver saw: every attempt, and the bodies it accepted with their signatures.
#[derive(Default)]
struct Received {
    attempts: AtomicUsize,
    accepted: Mutex<Vec<(Bytes, String)>>,
}

/// A receiver that answers 500 to its first `fail_first` requests, then 200.
async fn receiver(fail_first: usize) -> anyhow::Result<(String, Arc<Received>)> {
    let seen = Arc::new(Received::default());
    let state = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let state = state.clone();
            async move {
                let n = state.attempts.fetch_add(1, Ordering::SeqCst);
                if n < fail_first {
                    return StatusCode::INTERNAL_SERVER_ERROR;
                }
                let sig = headers
                    .get(SIGNATURE_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                if let Ok(mut accepted) = state.accepted.lock() {
                    accepted.push((body, sig));
                }
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, seen))
}

fn accepted(r: &Received) -> Vec<(Bytes, String)> {
    r.accepted.lock().map(|a| a.clone()).unwrap_or_default()
}

fn fast() -> WebhookSettings {
    WebhookSettings {
        timeout: Duration::from_secs(2),
        retries: 4,
        min_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
    }
}

fn backlog_rule(url: &str, cooldown_secs: i32) -> AlertRuleInput {
    AlertRuleInput {
        name: "carddata backlog".into(),
        metric: AlertMetric::DueBacklog,
        task_type: Some(TaskType::Carddata),
        stop_reason: None,
        operator: AlertOperator::Gt,
        threshold: dec!(5),
        window_secs: 60,
        enabled: true,
        webhook_url: Some(url.to_owned()),
        cooldown_secs,
        webhook_secret: None,
    }
}

#[tokio::test]
async fn a_backlog_rule_fires_once_respects_the_cooldown_and_resolves_once() -> anyhow::Result<()> {
    let w = World::new().await?;
    let (url, seen) = receiver(0).await?;
    let created = AlertService::new(w.stores.alerts.clone())
        .create(backlog_rule(&url, 3600))
        .await?;
    let id = created.rule.id;
    let evaluator = w.evaluator(fast())?;

    let quiet = evaluator.evaluate().await?;
    assert_eq!(
        (quiet.evaluated, quiet.fired.len()),
        (1, 0),
        "no backlog yet"
    );

    w.due_cards(TaskType::Carddata, 10, 30).await?;
    let first = evaluator.evaluate().await?;
    assert_eq!(first.fired, vec![id]);
    assert_eq!(first.firing, 1);
    let again = evaluator.evaluate().await?;
    assert!(again.fired.is_empty(), "still firing: not repeated");
    assert_eq!(again.firing, 1);

    // The backlog is worked off: resolves once.
    w.queue
        .remove_many_from_all_queues(&(1..=10).map(domain::CardId).collect::<Vec<_>>())
        .await?;
    let resolved = evaluator.evaluate().await?;
    assert_eq!(resolved.resolved, vec![id]);
    assert_eq!(resolved.firing, 0);
    assert!(
        evaluator.evaluate().await?.resolved.is_empty(),
        "resolved once"
    );

    // Backlog again within the cool-down: held, but not fired.
    w.due_cards(TaskType::Carddata, 10, 30).await?;
    let held = evaluator.evaluate().await?;
    assert_eq!((held.fired.len(), held.suppressed.clone()), (0, vec![id]));
    // After the cool-down it fires again.
    w.clock.advance(chrono::Duration::seconds(3601));
    assert_eq!(evaluator.evaluate().await?.fired, vec![id]);

    let history = w.stores.alerts.history(Some(id), Page::default()).await?;
    assert_eq!(history.total, 2, "two firings: {:?}", history.items);
    let old = &history.items[1];
    assert_eq!(old.value, dec!(10));
    assert!(old.resolved_at.is_some());

    // Three webhooks (fired, resolved, fired), each signed with the rule's secret.
    wait_for(Duration::from_secs(10), || async {
        Ok(accepted(&seen).len() == 3)
    })
    .await?;
    let bodies = accepted(&seen);
    for (body, signature) in &bodies {
        assert!(
            verify(&created.webhook_secret, body, signature),
            "signature {signature}"
        );
        assert!(!verify("another secret, long enough", body, signature));
    }
    let parsed: Vec<WebhookBody> = bodies
        .iter()
        .map(|(b, _)| serde_json::from_slice(b))
        .collect::<Result<_, _>>()?;
    let states: Vec<_> = parsed.iter().map(|b| b.state).collect();
    use admin::webhook::AlertState::{Fired, Resolved};
    assert_eq!(states, vec![Fired, Resolved, Fired]);
    assert_eq!((parsed[0].value, parsed[0].threshold), (dec!(10), dec!(5)));
    assert_eq!(parsed[0].metric, AlertMetric::DueBacklog);
    // `notified` records the outcomes.
    wait_for(Duration::from_secs(10), || async {
        let h = w.stores.alerts.history(Some(id), Page::default()).await?;
        Ok(h.items[1].notified && h.items[1].resolve_notified && h.items[0].notified)
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_receiver_failing_twice_gets_the_alert_on_the_third_try() -> anyhow::Result<()> {
    let w = World::new().await?;
    let (url, seen) = receiver(2).await?;
    let created = AlertService::new(w.stores.alerts.clone())
        .create(backlog_rule(&url, 600))
        .await?;
    w.due_cards(TaskType::Carddata, 6, 10).await?;
    let report = w.evaluator(fast())?.evaluate().await?;
    assert_eq!(report.fired, vec![created.rule.id]);
    wait_for(Duration::from_secs(10), || async {
        Ok(accepted(&seen).len() == 1)
    })
    .await?;
    assert_eq!(
        seen.attempts.load(Ordering::SeqCst),
        3,
        "two failures, then the delivery"
    );
    wait_for(Duration::from_secs(10), || async {
        let h = w
            .stores
            .alerts
            .history(Some(created.rule.id), Page::default())
            .await?;
        Ok(h.items
            .first()
            .is_some_and(|f| f.notified && f.notify_error.is_none()))
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_dead_receiver_never_stalls_the_evaluator() -> anyhow::Result<()> {
    let w = World::new().await?;
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let dead_url = format!("http://{}/hook", silent.local_addr()?);
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            sockets.push(socket);
        }
    });
    let (live_url, seen) = receiver(0).await?;
    let alerts = AlertService::new(w.stores.alerts.clone());
    let dead = alerts.create(backlog_rule(&dead_url, 600)).await?;
    let mut live_rule = backlog_rule(&live_url, 600);
    live_rule.name = "live".into();
    let live = alerts.create(live_rule).await?;
    w.due_cards(TaskType::Carddata, 20, 10).await?;

    let evaluator = w.evaluator(WebhookSettings {
        timeout: Duration::from_secs(3),
        retries: 1,
        min_delay: Duration::from_millis(50),
        max_delay: Duration::from_millis(50),
    })?;
    let started = Instant::now();
    let report = evaluator.evaluate().await?;
    let elapsed = started.elapsed();
    assert_eq!(report.fired.len(), 2);
    assert!(
        elapsed < Duration::from_secs(2),
        "the pass took {elapsed:?}"
    );
    // A second pass is just as quick while the dead delivery still hangs.
    let started = Instant::now();
    evaluator.evaluate().await?;
    assert!(started.elapsed() < Duration::from_secs(2));
    // The live receiver got its alert meanwhile; the dead one is recorded as failed.
    wait_for(Duration::from_secs(5), || async {
        Ok(accepted(&seen).len() == 1)
    })
    .await?;
    wait_for(Duration::from_secs(20), || async {
        let h = w
            .stores
            .alerts
            .history(Some(dead.rule.id), Page::default())
            .await?;
        Ok(h.items
            .first()
            .is_some_and(|f| !f.notified && f.notify_error.is_some()))
    })
    .await?;
    let live_history = w
        .stores
        .alerts
        .history(Some(live.rule.id), Page::default())
        .await?;
    assert!(live_history.items[0].notified);
    held.abort();
    Ok(())
}
