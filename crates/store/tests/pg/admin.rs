use crate::common::{new_card, now, setup};
use chrono::Duration;
use domain::store::Page;
use domain::{
    AlertOperator, AlertRuleInput, ApiKeyRole, CardCategory, CardCondition, CarrierId,
    CleanupConfigInput, GatewayOutcome, Intervals, NetworkStatus, NewCardStateLog,
    PollingConfigInput, StopReason, StoreError, TaskType,
};
use rust_decimal_macros::dec;
use sea_orm::{ConnectionTrait, DbBackend, Statement};

fn config(name: &str, priority: i32) -> PollingConfigInput {
    PollingConfigInput {
        name: name.into(),
        priority,
        enabled: true,
        card_condition: Some(CardCondition::NotRealname),
        card_category: Some(CardCategory::Industry),
        carrier_id: Some(CarrierId(3)),
        intervals: Intervals {
            realname_interval_secs: Some(300),
            carddata_interval_secs: None,
            package_interval_secs: Some(3600),
            protect_interval_secs: None,
        },
    }
}

#[tokio::test]
async fn polling_configs_round_trip() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let b = s.configs.insert(&config("b", 20)).await?;
    let a = s.configs.insert(&config("a", 10)).await?;
    assert_eq!(s.configs.get(a.id).await?, Some(a.clone()));
    assert_eq!(a.spec.intervals, config("a", 10).intervals);
    assert_eq!(a.spec.card_condition, Some(CardCondition::NotRealname));
    let all = s.configs.list_all().await?;
    assert_eq!(
        all.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![a.id, b.id],
        "by priority"
    );

    match s.configs.insert(&config("a", 1)).await {
        Err(StoreError::Conflict { field, .. }) => assert_eq!(field, "name"),
        other => panic!("expected a conflict on name, got {other:?}"),
    }
    let mut changed = config("a2", 5);
    changed.card_condition = None;
    changed.intervals.carddata_interval_secs = Some(60);
    let updated = s.configs.update(a.id, &changed).await?;
    assert_eq!(
        (
            updated.spec.name.as_str(),
            updated.spec.priority,
            updated.spec.card_condition
        ),
        ("a2", 5, None)
    );
    assert_eq!(updated.created_at, a.created_at);
    assert!(!s.configs.set_enabled(a.id, false).await?.spec.enabled);
    let mut bad = config("bad", 1);
    bad.intervals.realname_interval_secs = Some(0);
    assert!(
        matches!(s.configs.insert(&bad).await, Err(StoreError::Invalid(_))),
        "CHECK > 0"
    );

    assert!(s.configs.delete(a.id).await?);
    assert!(!s.configs.delete(a.id).await?);
    assert!(matches!(
        s.configs.update(a.id, &changed).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        s.configs.set_enabled(a.id, true).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(s.configs.get(a.id).await?, None);
    Ok(())
}

fn rule(name: &str) -> AlertRuleInput {
    AlertRuleInput {
        name: name.into(),
        metric: domain::AlertMetric::QueueDepth,
        task_type: Some(TaskType::Carddata),
        stop_reason: None,
        operator: AlertOperator::Ge,
        threshold: dec!(1000.5),
        window_secs: 300,
        enabled: true,
        webhook_url: Some("http://hook.example/alert".into()),
        cooldown_secs: 600,
        webhook_secret: Some("0123456789abcdef0123".into()),
    }
}

#[tokio::test]
async fn alert_rules_and_history_round_trip() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let r1 = s.alerts.insert_rule(&rule("depth")).await?;
    let mut off = rule("off");
    off.enabled = false;
    off.task_type = None;
    let r2 = s.alerts.insert_rule(&off).await?;
    assert_eq!(s.alerts.get_rule(r1.id).await?, Some(r1.clone()));
    assert_eq!(r1.rule, rule("depth"));
    assert_eq!(s.alerts.list_rules(Page::new(1, 1)).await?.total, 2);
    assert_eq!(
        s.alerts
            .enabled_rules()
            .await?
            .iter()
            .map(|r| r.id)
            .collect::<Vec<_>>(),
        vec![r1.id]
    );
    let mut changed = rule("depth2");
    changed.operator = AlertOperator::Lt;
    assert_eq!(s.alerts.update_rule(r1.id, &changed).await?.rule, changed);

    let fired = s.alerts.record_firing(r1.id, dec!(1200), now()).await?;
    assert_eq!(
        (fired.value, fired.notified, fired.resolved_at),
        (dec!(1200), false, None)
    );
    assert_eq!(
        s.alerts.open_firing(r1.id).await?.map(|f| f.id),
        Some(fired.id)
    );
    s.alerts.set_notified(fired.id, false, true, None).await?;
    s.alerts.record_firing(r2.id, dec!(1), now()).await?;
    assert_eq!(s.alerts.open_firings().await?.len(), 2);
    let at = now();
    assert_eq!(s.alerts.resolve(r1.id, at).await?, 1);
    assert_eq!(
        s.alerts.resolve(r1.id, at).await?,
        0,
        "nothing open any more"
    );
    let h = s.alerts.history(Some(r1.id), Page::default()).await?;
    assert_eq!(h.total, 1);
    assert_eq!(h.items[0].resolved_at, Some(at));
    assert!(h.items[0].notified, "the webhook outcome was recorded");
    assert_eq!(s.alerts.history(None, Page::default()).await?.total, 2);

    assert!(s.alerts.delete_rule(r1.id).await?);
    assert!(!s.alerts.delete_rule(r1.id).await?);
    assert_eq!(
        s.alerts.history(None, Page::default()).await?.total,
        1,
        "history cascades"
    );
    assert!(matches!(
        s.alerts.update_rule(r1.id, &changed).await,
        Err(StoreError::NotFound { .. })
    ));
    Ok(())
}

#[tokio::test]
async fn cleanup_configs_logs_and_batched_deletes() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    // Start from no config (migration 0002 seeds one per table).
    sea_orm::ConnectionTrait::execute_unprepared(&db.conn, "DELETE FROM tb_data_cleanup_config")
        .await?;
    let input = CleanupConfigInput {
        table_name: "tb_card_state_log".into(),
        retention_days: 30,
        enabled: true,
        batch_size: 2,
    };
    let c = s.cleanup.insert_config(&input).await?;
    assert_eq!(s.cleanup.get_config(c.id).await?, Some(c.clone()));
    assert!(
        matches!(s.cleanup.insert_config(&input).await, Err(StoreError::Conflict { field, .. }) if field == "table_name")
    );
    let bad = CleanupConfigInput {
        table_name: "tb_iot_card".into(),
        ..input.clone()
    };
    assert!(matches!(
        s.cleanup.insert_config(&bad).await,
        Err(StoreError::Invalid(_))
    ));
    let changed = CleanupConfigInput {
        retention_days: 7,
        ..input.clone()
    };
    assert_eq!(
        s.cleanup.update_config(c.id, &changed).await?.config,
        changed
    );
    assert_eq!(s.cleanup.list_configs(Page::default()).await?.total, 1);

    // Five state-log rows, three of them 40 days old.
    let card = s.cards.insert(&new_card("8986000000000000001")).await?;
    let entry = NewCardStateLog {
        card_id: card.id,
        from_status: NetworkStatus::Online,
        to_status: NetworkStatus::Stopped,
        stop_reason: Some(StopReason::Manual),
        trigger: "operator".into(),
        gateway_outcome: GatewayOutcome::Ok,
        trace_id: None,
    };
    for _ in 0..5 {
        s.cards.record_state_change(&entry).await?;
    }
    db.conn
        .execute_unprepared(
            "UPDATE tb_card_state_log SET created_at = now() - interval '40 days' \
             WHERE id IN (SELECT id FROM tb_card_state_log ORDER BY id LIMIT 3)",
        )
        .await?;
    let cutoff = now() - Duration::days(30);
    assert_eq!(
        s.cleanup
            .count_older_than("tb_card_state_log", cutoff)
            .await?,
        3
    );
    assert_eq!(
        s.cleanup
            .delete_older_than("tb_card_state_log", cutoff, 2)
            .await?,
        2
    );
    assert_eq!(
        s.cleanup
            .delete_older_than("tb_card_state_log", cutoff, 2)
            .await?,
        1
    );
    assert_eq!(
        s.cleanup
            .delete_older_than("tb_card_state_log", cutoff, 2)
            .await?,
        0
    );
    assert_eq!(s.cards.state_log(card.id, Page::default()).await?.total, 2);

    // The partitioned usage history: old rows in an old month's partition (default).
    for days in [400, 300, 1] {
        db.conn
            .execute_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                "INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at) \
                 VALUES ($1, 1, 1, now() - make_interval(days => $2))",
                [card.id.get().into(), days.into()],
            ))
            .await?;
    }
    assert_eq!(
        s.cleanup
            .count_older_than("tb_data_usage_record", cutoff)
            .await?,
        2
    );
    assert_eq!(
        s.cleanup
            .delete_older_than("tb_data_usage_record", cutoff, 10)
            .await?,
        2
    );
    assert_eq!(
        s.cleanup
            .count_older_than("tb_data_usage_record", now())
            .await?,
        1
    );
    for table in [
        "tb_polling_alert_history",
        "tb_data_cleanup_log",
        "tb_polling_manual_trigger_log",
    ] {
        assert_eq!(s.cleanup.delete_older_than(table, cutoff, 10).await?, 0);
    }

    for refused in ["tb_iot_card", "tb_card_state_log; DROP TABLE tb_iot_card"] {
        assert!(matches!(
            s.cleanup.delete_older_than(refused, cutoff, 10).await,
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(
            s.cleanup.count_older_than(refused, cutoff).await,
            Err(StoreError::Invalid(_))
        ));
    }

    let log = s.cleanup.start_log("tb_card_state_log", None).await?;
    assert_eq!((log.status.as_str(), log.finished_at), ("running", None));
    s.cleanup.finish_log(log.id, 3, None).await?;
    let failed = s
        .cleanup
        .start_log("tb_data_usage_record", Some("run-1".into()))
        .await?;
    s.cleanup
        .finish_log(failed.id, 0, Some("boom".into()))
        .await?;
    let logs = s.cleanup.logs(Page::default()).await?;
    assert_eq!(logs.total, 2);
    let done = logs
        .items
        .iter()
        .find(|l| l.id == log.id)
        .ok_or_else(|| anyhow::anyhow!("log"))?;
    assert_eq!((done.status.as_str(), done.rows_deleted), ("completed", 3));
    assert!(done.finished_at.is_some());
    let bad = logs
        .items
        .iter()
        .find(|l| l.id == failed.id)
        .ok_or_else(|| anyhow::anyhow!("log"))?;
    assert_eq!(
        (bad.status.as_str(), bad.error.as_deref()),
        ("failed", Some("boom"))
    );
    assert!(matches!(
        s.cleanup.finish_log(999, 0, None).await,
        Err(StoreError::NotFound { .. })
    ));

    assert!(s.cleanup.delete_config(c.id).await?);
    assert_eq!(s.cleanup.get_config(c.id).await?, None);
    Ok(())
}

#[tokio::test]
async fn manual_trigger_log_round_trip() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let scope = serde_json::json!({"card_ids": [1, 2, 3]});
    let first = s
        .manual_triggers
        .append("ops", &scope, &[TaskType::Realname, TaskType::Package], 3)
        .await?;
    assert_eq!(first.scope, scope);
    assert_eq!(
        first.task_types,
        vec![TaskType::Realname, TaskType::Package]
    );
    let second = s
        .manual_triggers
        .append(
            "ops",
            &serde_json::json!({"carrier_id": 2}),
            &TaskType::ALL,
            10,
        )
        .await?;
    let page = s.manual_triggers.list(Page::new(1, 20)).await?;
    assert_eq!(page.total, 2);
    assert_eq!(page.items[0].id, second.id, "newest first");
    assert_eq!(page.items[1], first);
    Ok(())
}

#[tokio::test]
async fn api_keys_authenticate_touch_and_revoke() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let key = s
        .api_keys
        .insert("ops", ApiKeyRole::Admin, "hash-1")
        .await?;
    assert_eq!(
        (key.role, key.last_used_at, key.revoked_at),
        (ApiKeyRole::Admin, None, None)
    );
    assert!(matches!(
        s.api_keys.insert("again", ApiKeyRole::Viewer, "hash-1").await,
        Err(StoreError::Conflict { field, .. }) if field == "key_hash"
    ));
    let found = s
        .api_keys
        .authenticate("hash-1")
        .await?
        .ok_or_else(|| anyhow::anyhow!("no key"))?;
    assert_eq!(found.id, key.id);
    assert!(found.last_used_at.is_some(), "touched");
    let again = s
        .api_keys
        .authenticate("hash-1")
        .await?
        .ok_or_else(|| anyhow::anyhow!("no key"))?;
    assert_eq!(
        again.last_used_at, found.last_used_at,
        "at most once a minute"
    );
    assert_eq!(s.api_keys.authenticate("nope").await?, None);
    assert!(s.api_keys.revoke(key.id).await?);
    assert!(!s.api_keys.revoke(key.id).await?);
    assert_eq!(s.api_keys.authenticate("hash-1").await?, None);
    Ok(())
}
