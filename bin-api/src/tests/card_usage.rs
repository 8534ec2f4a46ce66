//! `GET /cards/{id}/usage?month=`: the card's usage records of one month of `CMP_TIMEZONE`
//! (Asia/Shanghai here) by hour; the explain answer's phrases.

use super::*;
use sea_orm::ConnectionTrait;

/// Writes usage records of card `id` as the usage poll would (the store's write path is not
/// what is tested here).
async fn record(w: &World, id: i64, at_utc: &str, delta: &str, total: &str) {
    w.env
        .db
        .conn
        .execute_unprepared(&format!(
            "INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at) \
             VALUES ({id}, {delta}, {total}, '{at_utc}+00')"
        ))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_card_month_of_usage_is_read_by_hour_in_the_deployment_calendar() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, serde_json::json!({})).await;
    let other = card(&w, 2, serde_json::json!({})).await;
    // 2026-11-30 23:30 in Shanghai: November.
    record(&w, id, "2026-11-30 15:30:00", "5", "900").await;
    // 2026-12-01 00:10 and 00:40 in Shanghai: the first hour of December.
    record(&w, id, "2026-11-30 16:10:00", "10.5", "10.5").await;
    record(&w, id, "2026-11-30 16:40:00", "2", "12.5").await;
    record(&w, id, "2026-12-02 01:05:00", "7.5", "20").await;
    // 2027-01-01 00:00 in Shanghai: January; another card's record.
    record(&w, id, "2026-12-31 16:00:00", "1", "1").await;
    record(&w, other, "2026-12-02 01:05:00", "3", "3").await;

    let a = w
        .get(
            &format!("/api/admin/cards/{id}/usage?month=2026-12"),
            VIEWER,
        )
        .await;
    let u = a.ok(StatusCode::OK);
    assert_eq!(u["month"], "2026-12");
    assert_eq!(u["timezone"], "Asia/Shanghai");
    assert_eq!(u["from"], "2026-11-30T16:00:00Z");
    assert_eq!(u["to"], "2026-12-31T16:00:00Z");
    let hours = u["hours"].as_array().unwrap();
    assert_eq!(hours.len(), 2, "{u}");
    assert_eq!(hours[0]["hour"], "2026-11-30T16:00:00Z");
    assert_eq!(hours[0]["records"], 2);
    assert_eq!(hours[0]["month_total_mb"], "12.5");
    assert_eq!(hours[0]["delta_mb"], "12.5");
    assert_eq!(hours[1]["hour"], "2026-12-02T01:00:00Z");
    assert_eq!(hours[1]["month_total_mb"], "20");

    let a = w
        .get(
            &format!("/api/admin/cards/{id}/usage?month=2026-11"),
            VIEWER,
        )
        .await;
    assert_eq!(a.ok(StatusCode::OK)["hours"].as_array().unwrap().len(), 1);
    // No month: the current one.
    let a = w.get(&format!("/api/admin/cards/{id}/usage"), VIEWER).await;
    // Shanghai keeps UTC+8 all year.
    let now = chrono::Utc::now() + chrono::Duration::hours(8);
    assert_eq!(
        a.ok(StatusCode::OK)["month"],
        now.format("%Y-%m").to_string()
    );
    for bad in ["2026-13", "2026-1", "december", "2026-12-01"] {
        let p = w
            .get(&format!("/api/admin/cards/{id}/usage?month={bad}"), VIEWER)
            .await;
        let p = p.problem(StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(p["errors"][0]["pointer"], "/month", "{bad}");
    }
    w.get("/api/admin/cards/999999/usage?month=2026-12", VIEWER)
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_explain_answer_carries_its_sentence_as_codes() {
    let w = World::new().await;
    config_everything(&w, 3600).await;
    let id = card(&w, 1, serde_json::json!({})).await;
    let e = w
        .get(&format!("/api/admin/cards/{id}/explain"), VIEWER)
        .await;
    let e = e.ok(StatusCode::OK);
    let p = &e["phrases"];
    assert_eq!(p["state"]["code"], "state_online");
    assert_eq!(p["evidence"][0]["code"], "evidence_no_package");
    assert_eq!(p["evidence"][0]["params"]["owner_kind"], "card");
    assert_eq!(p["evidence"][0]["params"]["owner_id"], id.to_string());
    assert_eq!(p["next"]["code"], "next_stop");
    assert_eq!(p["next"]["params"]["reason"], "no_package");
    assert_eq!(
        p["would_change"][0]["code"],
        "change_package_lifts_no_package"
    );
    // The English texts are the phrases rendered, item for item.
    assert_eq!(
        p["would_change"].as_array().unwrap().len(),
        e["would_change"].as_array().unwrap().len()
    );
    assert_eq!(
        e["summary"],
        format!(
            "online — card {id} has no valid package; the next evaluation stops it (no_package); \
             a valid package for card {id} (POST /package-usages) would lift no_package"
        )
    );
}
