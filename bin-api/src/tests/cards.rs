//! Cards through the API.

use super::*;
use serde_json::json;

#[tokio::test]
async fn create_get_list_and_conflicts() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, json!({"msisdn": "861380001"})).await;
    // Queued in all four types, due now.
    assert!(scores(&w, id).await.iter().all(Option::is_some));
    let a = w.get(&format!("/api/admin/cards/{id}"), VIEWER).await;
    assert_eq!(a.ok(StatusCode::OK)["iccid"], iccid(1));
    card(
        &w,
        2,
        json!({"card_category": "industry", "real_name_status": 0}),
    )
    .await;
    // Duplicate ICCID: 409 naming the field, nothing written.
    let a = w
        .post(
            "/api/admin/cards",
            ADMIN,
            json!({"iccid": iccid(1), "carrier_id": 1}),
        )
        .await;
    let p = a.problem(StatusCode::CONFLICT);
    assert_eq!(p["errors"][0]["pointer"], "/iccid");
    // Bad values: 422 with pointers; unknown device 422.
    let a = w
        .post(
            "/api/admin/cards",
            ADMIN,
            json!({"iccid": "x y", "carrier_id": 0}),
        )
        .await;
    assert_eq!(
        a.problem(StatusCode::UNPROCESSABLE_ENTITY)["errors"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let a = w
        .post(
            "/api/admin/cards",
            ADMIN,
            json!({"iccid": iccid(123), "carrier_id": 1, "device_id": 77}),
        )
        .await;
    a.problem(StatusCode::UNPROCESSABLE_ENTITY);
    for key in [VIEWER, OPERATOR] {
        w.post(
            "/api/admin/cards",
            key,
            json!({"iccid": iccid(55), "carrier_id": 1}),
        )
        .await
        .problem(StatusCode::FORBIDDEN);
    }
    assert_eq!(w.stores.cards.count().await.unwrap(), 2);
    // Filters.
    let w = &w;
    let list =
        |q: &'static str| async move { w.get(&format!("/api/admin/cards?{q}"), VIEWER).await };
    assert_eq!(list("").await.ok(StatusCode::OK)["total"], 2);
    assert_eq!(list("iccid=8986").await.ok(StatusCode::OK)["total"], 2);
    assert_eq!(
        list("iccid=8986000000000000000002")
            .await
            .ok(StatusCode::OK)["total"],
        0
    );
    assert_eq!(
        list("msisdn=861380001").await.ok(StatusCode::OK)["total"],
        1
    );
    assert_eq!(
        list("card_category=industry").await.ok(StatusCode::OK)["total"],
        1
    );
    assert_eq!(
        list("real_name_status=1&network_status=1")
            .await
            .ok(StatusCode::OK)["total"],
        1
    );
    assert_eq!(
        list("enable_polling=false").await.ok(StatusCode::OK)["total"],
        0
    );
    list("network_status=7")
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    list("stop_reason=bogus")
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    w.get("/api/admin/cards/999", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_leaves_no_queue_entry_and_no_cache() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, json!({})).await;
    assert!(
        w.inspector
            .queued_anywhere(domain::CardId(id))
            .await
            .unwrap()
    );
    w.call(
        Method::DELETE,
        &format!("/api/admin/cards/{id}"),
        Some(OPERATOR),
        None,
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    assert!(
        w.inspector
            .queued_anywhere(domain::CardId(id))
            .await
            .unwrap()
    );
    let a = w
        .call(
            Method::DELETE,
            &format!("/api/admin/cards/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    assert!(
        !w.inspector
            .queued_anywhere(domain::CardId(id))
            .await
            .unwrap()
    );
    assert!(!w.inspector.cached(domain::CardId(id)).await.unwrap());
    w.get(&format!("/api/admin/cards/{id}"), ADMIN)
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn operator_stop_and_start_with_state_log_and_explain() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, json!({})).await;
    w.post(&format!("/api/admin/cards/{id}/stop"), VIEWER, json!({}))
        .await
        .problem(StatusCode::FORBIDDEN);
    let a = w
        .post(&format!("/api/admin/cards/{id}/stop"), OPERATOR, json!({}))
        .await;
    let body = a.ok(StatusCode::OK);
    assert_eq!(body["evaluation"]["action"], "stopped");
    assert_eq!(body["card"]["stop_reason"], "manual");
    assert_eq!(body["card"]["network_status"], 0);
    assert_eq!(w.sim.state().card(&iccid(1)).unwrap().stops_applied, 1);
    let e = w
        .get(&format!("/api/admin/cards/{id}/explain"), VIEWER)
        .await;
    let e = e.ok(StatusCode::OK);
    assert_eq!(e["decision"]["manual_stop"], true);
    assert!(
        e["summary"]
            .as_str()
            .unwrap()
            .starts_with("stopped: manual"),
        "{e}"
    );
    assert_eq!(e["next_due"].as_array().unwrap().len(), 4);
    assert_eq!(e["config"]["name"], "everything");
    let a = w
        .post(&format!("/api/admin/cards/{id}/start"), OPERATOR, json!({}))
        .await;
    assert_eq!(a.ok(StatusCode::OK)["evaluation"]["action"], "started");
    let log = w
        .get(&format!("/api/admin/cards/{id}/state-log"), VIEWER)
        .await;
    let log = log.ok(StatusCode::OK);
    assert_eq!(log["total"], 2);
    assert_eq!(log["items"][0]["trigger"], "operator");
    assert!(
        log["items"][0]["trace_id"].is_null(),
        "traces are off: {log}"
    );
    assert!(
        w.audit()
            .await
            .iter()
            .all(|row| row.entry.trace_id.is_none())
    );
    w.post("/api/admin/cards/999/stop", OPERATOR, json!({}))
        .await
        .problem(StatusCode::NOT_FOUND);
    w.get("/api/admin/cards/999/explain", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);
    w.get("/api/admin/cards/999/state-log", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn explain_no_package_says_what_resumes_it() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, json!({})).await;
    let e = w
        .get(&format!("/api/admin/cards/{id}/explain"), ADMIN)
        .await;
    let e = e.ok(StatusCode::OK);
    assert_eq!(e["decision"]["action"], "stop");
    assert_eq!(e["decision"]["holding_reason"], "no_package");
    assert!(
        e["would_change"][0]
            .as_str()
            .unwrap()
            .contains("POST /package-usages"),
        "{e}"
    );
    assert!(e["next_due"][0]["next_check_at"].is_string());
}

#[tokio::test]
async fn status_change_reschedules() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, json!({})).await;
    let a = w
        .call(
            Method::PATCH,
            &format!("/api/admin/cards/{id}/status"),
            Some(ADMIN),
            Some(json!({"status": 3})),
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["status"], 3);
    assert!(scores(&w, id).await.iter().all(Option::is_some));
    w.call(
        Method::PATCH,
        &format!("/api/admin/cards/{id}/status"),
        Some(ADMIN),
        Some(json!({"status": "x"})),
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn import_is_all_or_nothing_with_row_errors() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    card(&w, 1, json!({})).await;
    let rows: Vec<Value> = (10..15)
        .map(|i| json!({"iccid": iccid(i), "carrier_id": 1}))
        .chain([
            json!({"iccid": iccid(1), "carrier_id": 1}),
            json!({"iccid": iccid(10), "carrier_id": 1}),
            json!({"iccid": "", "carrier_id": 1}),
        ])
        .collect();
    let a = w
        .post("/api/admin/cards/import", OPERATOR, json!({"cards": rows}))
        .await;
    let p = a.problem(StatusCode::UNPROCESSABLE_ENTITY);
    let pointers: Vec<&str> = p["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert!(
        pointers.contains(&"/cards/5/iccid")
            && pointers.contains(&"/cards/6/iccid")
            && pointers.contains(&"/cards/7/iccid"),
        "{pointers:?}"
    );
    assert_eq!(w.stores.cards.count().await.unwrap(), 1);
    let rows: Vec<Value> = (10..1010)
        .map(|i| json!({"iccid": iccid(i), "carrier_id": 1}))
        .collect();
    let a = w
        .post("/api/admin/cards/import", OPERATOR, json!({"cards": rows}))
        .await;
    let r = a.ok(StatusCode::CREATED);
    assert_eq!(r["imported"], 1000);
    assert_eq!(r["enqueued"], 1000);
    w.post("/api/admin/cards/import", VIEWER, json!({"cards": []}))
        .await
        .problem(StatusCode::FORBIDDEN);
    w.post("/api/admin/cards/import", ADMIN, json!({"cards": []}))
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let audit = w.audit().await;
    let row = audit
        .iter()
        .find(|r| r.entry.route == "/api/admin/cards/import" && r.entry.status == 201)
        .unwrap();
    assert_eq!(row.entry.summary["cards"]["count"], 1000);
}

#[tokio::test]
async fn a_partial_import_writes_the_good_rows_and_reports_each_bad_one() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    card(&w, 1, json!({})).await;
    let rows = json!({"cards": [
        {"iccid": iccid(10), "carrier_id": 1},
        {"iccid": iccid(11), "carrier_id": 1},
        {"iccid": iccid(12), "carrier_id": 2},
        {"iccid": iccid(1), "carrier_id": 1},
        {"iccid": iccid(10), "carrier_id": 1},
        {"iccid": "", "carrier_id": 0},
        {"iccid": iccid(13), "carrier_id": 1, "device_id": 999_999},
        {"iccid": iccid(20), "carrier_id": 3},
    ]});
    let a = w
        .post("/api/admin/cards/import?mode=partial", OPERATOR, rows)
        .await;
    let r = a.ok(StatusCode::CREATED);
    assert_eq!(r["imported"], 4);
    assert_eq!(r["enqueued"], 4);
    assert_eq!(r["ids"].as_array().unwrap().len(), 4);
    let rejected = r["rejected"].as_array().unwrap();
    let at: Vec<(u64, u64)> = rejected
        .iter()
        .map(|x| (x["row"].as_u64().unwrap(), x["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(at, [(3, 4), (4, 5), (5, 6), (6, 7)]);
    assert_eq!(rejected[0]["errors"][0]["pointer"], "/cards/3/iccid");
    assert_eq!(
        rejected[0]["errors"][0]["message"],
        "already belongs to a live card"
    );
    assert_eq!(
        rejected[1]["errors"][0]["message"],
        "repeats the ICCID of row 0"
    );
    let row5: Vec<&str> = rejected[2]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert!(
        row5.contains(&"/cards/5/iccid") && row5.contains(&"/cards/5/carrier_id"),
        "{row5:?}"
    );
    assert_eq!(rejected[3]["errors"][0]["pointer"], "/cards/6/device_id");
    assert_eq!(w.stores.cards.count().await.unwrap(), 5);
    // Each imported card is queued like any other.
    let first = r["ids"][0].as_i64().unwrap();
    assert!(scores(&w, first).await.iter().all(Option::is_some));

    // No good row: refused as a whole, nothing written.
    let none_good =
        json!({"cards": [{"iccid": iccid(1), "carrier_id": 1}, {"iccid": "x", "carrier_id": 1}]});
    w.post("/api/admin/cards/import?mode=partial", OPERATOR, none_good)
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    // The default and the explicit all-or-nothing refuse a file with one bad row.
    let one_bad = json!({"cards": [{"iccid": iccid(30), "carrier_id": 1}, {"iccid": iccid(1), "carrier_id": 1}]});
    for path in [
        "/api/admin/cards/import",
        "/api/admin/cards/import?mode=all-or-nothing",
    ] {
        w.post(path, OPERATOR, one_bad.clone())
            .await
            .problem(StatusCode::UNPROCESSABLE_ENTITY);
    }
    // An unknown mode is refused, not guessed.
    w.post("/api/admin/cards/import?mode=some", OPERATOR, one_bad)
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(w.stores.cards.count().await.unwrap(), 5);
}

/// Reads a background import until it is no longer running.
async fn finished_job(w: &World, id: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let a = w
            .get(&format!("/api/admin/cards/import/{id}"), VIEWER)
            .await;
        let job = a.ok(StatusCode::OK).clone();
        if job["state"] != "running" {
            return job;
        }
        assert!(std::time::Instant::now() < deadline, "still running: {job}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_background_import_shows_its_progress_and_then_its_report_or_problem() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    card(&w, 1, json!({})).await;
    let mut rows: Vec<Value> = (10..2010)
        .map(|i| json!({"iccid": iccid(i), "carrier_id": 1}))
        .collect();
    rows.push(json!({"iccid": iccid(1), "carrier_id": 1}));
    let a = w
        .post(
            "/api/admin/cards/import?mode=partial&background=true",
            OPERATOR,
            json!({"cards": rows}),
        )
        .await;
    let job = a.ok(StatusCode::ACCEPTED).clone();
    assert_eq!(job["mode"], "partial");
    assert_eq!(job["progress"]["rows"], 2001);
    let id = job["id"].as_str().unwrap().to_owned();
    let done = finished_job(&w, &id).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["progress"]["phase"], "done");
    assert_eq!(done["progress"]["imported"], 2000);
    assert_eq!(done["progress"]["rejected"], 1);
    assert_eq!(done["progress"]["enqueued"], 2000);
    assert_eq!(done["report"]["rejected"][0]["line"], 2001);
    assert_eq!(w.stores.cards.count().await.unwrap(), 2001);

    // All or nothing, in the background: refused as the synchronous import would, nothing
    // written.
    let bad = json!({"cards": [{"iccid": iccid(5000), "carrier_id": 1}, {"iccid": iccid(1), "carrier_id": 1}]});
    let a = w
        .post("/api/admin/cards/import?background=true", OPERATOR, bad)
        .await;
    let id = a.ok(StatusCode::ACCEPTED)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let failed = finished_job(&w, &id).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(failed["problem"]["status"], 422);
    assert_eq!(failed["problem"]["errors"][0]["pointer"], "/cards/1/iccid");
    assert!(failed["report"].is_null());
    assert_eq!(w.stores.cards.count().await.unwrap(), 2001);

    // A file of no rows gets no job; an unknown job is 404; a viewer may not start one.
    w.post(
        "/api/admin/cards/import?background=true",
        OPERATOR,
        json!({"cards": []}),
    )
    .await
    .problem(StatusCode::UNPROCESSABLE_ENTITY);
    w.get("/api/admin/cards/import/ffff", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);
    w.post(
        "/api/admin/cards/import?background=true",
        VIEWER,
        json!({"cards": [{"iccid": iccid(6000), "carrier_id": 1}]}),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn explain_traffic_exhausted_names_the_package_and_the_reset() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, json!({})).await;
    let now = chrono::Utc::now();
    let usage = w
        .stores
        .packages
        .create_usage(&domain::NewPackageUsage {
            owner: domain::PackageOwner::Card(domain::CardId(id)),
            package_id: None,
            external_id: None,
            status: domain::PackageStatus::Active,
            data_limit_mb: Some(1000.into()),
            virtual_ratio: 1.into(),
            used_mb: 1024.into(),
            activate_on_realname: false,
            activated_at: Some(now - chrono::Duration::days(1)),
            expires_at: Some(now + chrono::Duration::days(30)),
            reset_cycle: domain::ResetCycle::Monthly,
            next_reset_at: Some(now + chrono::Duration::days(3)),
        })
        .await
        .unwrap();
    let e = w
        .get(&format!("/api/admin/cards/{id}/explain"), VIEWER)
        .await;
    let e = e.ok(StatusCode::OK);
    assert_eq!(e["decision"]["action"], "stop");
    assert_eq!(e["decision"]["holding_reason"], "traffic_exhausted");
    assert_eq!(e["packages"][0]["exhausted"], true);
    let summary = e["summary"].as_str().unwrap();
    let used = format!("package {} used 1024 of 1000 MB", usage.id);
    assert!(summary.contains(&used), "{summary}");
    assert!(summary.contains("monthly reset on"), "{summary}");
}

#[tokio::test]
async fn an_import_of_100_000_cards_fits_the_body_limit_and_the_timeout() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let rows: Vec<Value> = (0..100_000u64)
        .map(
            |i| json!({"iccid": iccid(i), "msisdn": format!("86{i:011}"), "carrier_id": 1 + i % 3}),
        )
        .collect();
    let started = std::time::Instant::now();
    let a = w
        .post("/api/admin/cards/import", OPERATOR, json!({"cards": rows}))
        .await;
    let r = a.ok(StatusCode::CREATED);
    assert_eq!(r["imported"], 100_000);
    assert_eq!(r["enqueued"], 100_000);
    assert!(started.elapsed() < crate::app::REQUEST_TIMEOUT);
    eprintln!("100,000 cards imported in {:?}", started.elapsed());
    // A partial import of 100,000 rows, every tenth an ICCID already imported.
    let rows: Vec<Value> = (0..100_000u64)
        .map(|i| {
            let n = if i % 10 == 0 { i } else { 100_000 + i };
            json!({"iccid": iccid(n), "carrier_id": 1})
        })
        .collect();
    let started = std::time::Instant::now();
    let a = w
        .post(
            "/api/admin/cards/import?mode=partial",
            OPERATOR,
            json!({"cards": rows}),
        )
        .await;
    let r = a.ok(StatusCode::CREATED);
    assert_eq!(r["imported"], 90_000);
    assert_eq!(r["rejected"].as_array().unwrap().len(), 10_000);
    assert_eq!(r["rejected"][9_999]["line"], 99_991);
    assert!(started.elapsed() < crate::app::REQUEST_TIMEOUT);
    eprintln!(
        "100,000 rows imported in part (10,000 rejected) in {:?}",
        started.elapsed()
    );
    let rows: Vec<Value> = (0..100_001u64)
        .map(|i| json!({"iccid": iccid(i), "carrier_id": 1}))
        .collect();
    w.post("/api/admin/cards/import", OPERATOR, json!({"cards": rows}))
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
}

/// With traces on and no read sampled, an operator's stop is still exported: its audit row
/// and the card's state-log row carry the same trace id (request, decision and carrier call
/// are one trace), and the state-log answer shows it. The collector is absent (nothing
/// listens on the port): sending fails in the exporter's thread, which the API never waits on.
#[tokio::test]
async fn an_operator_stop_is_traced_into_its_audit_and_state_log_rows() {
    let mut env: std::collections::HashMap<String, String> = [
        ("CMP_DATABASE_URL", "postgres://unused"),
        ("CMP_REDIS_URL", "redis://unused"),
        ("CMP_LOG", "warn"),
        ("CMP_OTEL_ENDPOINT", "http://127.0.0.1:9"),
        ("CMP_OTEL_POLL_SAMPLE", "0"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    env.remove("CMP_CONFIG");
    let settings = settings::Settings::from_source(&env).unwrap();
    let traces = ops::Traces::start(&settings, "cmp-api").unwrap().unwrap();
    let _installed =
        tracing::subscriber::set_default(ops::subscriber(&settings, Some(&traces)).unwrap());

    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, json!({})).await;
    // A read: not sampled at 0, nothing recorded anyway.
    w.get(&format!("/api/admin/cards/{id}"), VIEWER)
        .await
        .ok(StatusCode::OK);
    w.post(&format!("/api/admin/cards/{id}/stop"), OPERATOR, json!({}))
        .await
        .ok(StatusCode::OK);
    let log = w
        .get(&format!("/api/admin/cards/{id}/state-log"), VIEWER)
        .await;
    let log = log.ok(StatusCode::OK);
    let trace_id = log["items"][0]["trace_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the state-log answer carries the trace id: {log}"))
        .to_owned();
    assert_eq!(trace_id.len(), 32, "{trace_id}");
    let audit = w.audit().await;
    let stop = audit
        .iter()
        .find(|row| row.entry.route.ends_with("/stop"))
        .expect("the stop's audit row");
    assert_eq!(stop.entry.trace_id.as_deref(), Some(trace_id.as_str()));
}
