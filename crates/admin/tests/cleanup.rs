//! Data cleanup: usage partitions past the retention are dropped and younger ones untouched; a
//! 100,000-row log table is cleaned in batches (counted); the preview matches what the run then
//! removes; a failing table leaves a `failed` log row and its rows; the missing audit table (or
//! any table not created yet) is skipped; partitions are created ahead.

mod common;

use admin::cleanup::PreviewRow;
use common::World;
use domain::CleanupConfigInput;
use domain::store::Page;

/// Sets the retention and batch of `table` (the migration seeded a config for each).
async fn configure(
    w: &World,
    table: &str,
    retention_days: i32,
    batch: i32,
    enabled: bool,
) -> anyhow::Result<()> {
    let configs = w.stores.cleanup.list_configs(Page::new(1, 100)).await?;
    let config = configs
        .items
        .iter()
        .find(|c| c.config.table_name == table)
        .ok_or_else(|| anyhow::anyhow!("no config for {table}"))?;
    w.stores
        .cleanup
        .update_config(
            config.id,
            &CleanupConfigInput {
                table_name: table.into(),
                retention_days,
                enabled,
                batch_size: batch,
            },
        )
        .await?;
    Ok(())
}

async fn only(w: &World, table: &str, retention_days: i32, batch: i32) -> anyhow::Result<()> {
    for t in admin::cleanup::CLEANABLE_TABLES {
        configure(w, t, 3650, 10_000, false).await?;
    }
    configure(w, table, retention_days, batch, true).await
}

fn row<'a>(preview: &'a [PreviewRow], table: &str) -> &'a PreviewRow {
    preview
        .iter()
        .find(|r| r.table_name == table)
        .unwrap_or_else(|| panic!("{table} not in the preview"))
}

#[tokio::test]
async fn old_usage_partitions_are_dropped_and_younger_ones_kept() -> anyhow::Result<()> {
    let w = World::new().await?;
    only(&w, "tb_data_usage_record", 400, 1_000).await?;
    // Partitions of 2024 (older than 400 days), rows in two of them, in the migration's recent
    // partitions, and in the default partition (2023-05: no partition; 2030-01: in the future).
    w.sql("SELECT cmp_ensure_usage_partitions('2024-01-01', 6)")
        .await?;
    w.sql(
        "INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at) \
         SELECT g, 1, 1, '2024-02-10'::timestamptz FROM generate_series(1, 300) g; \
         INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at) \
         SELECT g, 1, 1, '2024-05-10'::timestamptz FROM generate_series(1, 200) g; \
         INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at) \
         SELECT g, 1, 1, now() - interval '1 day' FROM generate_series(1, 50) g; \
         INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at) \
         SELECT g, 1, 1, '2023-05-10'::timestamptz FROM generate_series(1, 40) g; \
         INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at) \
         SELECT g, 1, 1, '2030-01-10'::timestamptz FROM generate_series(1, 7) g; \
         ANALYZE tb_data_usage_record_202402, tb_data_usage_record_202405",
    )
    .await?;
    let service = w.cleanup();
    let preview = service.preview().await?;
    let usage = row(&preview, "tb_data_usage_record");
    assert_eq!(usage.partitions.len(), 6, "{:?}", usage.partitions);
    assert!(usage.estimated);
    assert_eq!(
        usage.rows,
        300 + 200 + 40,
        "estimates of the analysed partitions + default rows"
    );

    let report = service.run_now().await?;
    let t = report
        .tables
        .iter()
        .find(|t| t.table_name == "tb_data_usage_record")
        .unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(t.status, "completed", "{t:?}");
    assert_eq!(t.partitions_dropped, usage.partitions, "preview = run");
    assert_eq!(t.rows_deleted, usage.rows, "preview = run");
    for p in &usage.partitions {
        assert_eq!(
            w.count(&format!(
                "SELECT count(*) FROM pg_class WHERE relname = '{p}'"
            ))
            .await?,
            0
        );
    }
    assert_eq!(
        w.count("SELECT count(*) FROM tb_data_usage_record").await?,
        50 + 7,
        "younger rows untouched"
    );
    assert_eq!(
        w.count("SELECT count(*) FROM tb_data_usage_record WHERE recorded_at < now() - interval '400 days'").await?,
        0
    );
    // The recent partitions the migration made are all still there.
    let remaining = w.stores.cleanup.usage_partitions().await?;
    assert_eq!(remaining.len(), 15);
    let logs = service.logs(Page::default()).await?;
    let log = &logs.items[0];
    assert_eq!(
        (log.table_name.as_str(), log.status.as_str()),
        ("tb_data_usage_record", "completed")
    );
    assert_eq!(log.run_id.as_deref(), Some(report.run_id.as_str()));
    assert_eq!(log.rows_deleted, 540);
    Ok(())
}

#[tokio::test]
async fn a_100000_row_log_table_is_cleaned_in_batches() -> anyhow::Result<()> {
    let w = World::new().await?;
    only(&w, "tb_card_state_log", 30, 10_000).await?;
    w.sql(
        "INSERT INTO tb_card_state_log (iot_card_id, from_status, to_status, stop_reason, trigger, gateway_outcome, created_at) \
         SELECT g, 1, 0, 'manual', 'test', 'ok', now() - interval '40 days' - g * interval '1 second' \
         FROM generate_series(1, 100000) g; \
         INSERT INTO tb_card_state_log (iot_card_id, from_status, to_status, stop_reason, trigger, gateway_outcome, created_at) \
         SELECT g, 1, 0, 'manual', 'test', 'ok', now() - interval '29 days' FROM generate_series(1, 321) g",
    )
    .await?;
    let service = w.cleanup();
    let preview = service.preview().await?;
    assert_eq!(row(&preview, "tb_card_state_log").rows, 100_000);
    assert!(!row(&preview, "tb_card_state_log").estimated);
    let deletes_before = w
        .count("SELECT n_tup_del FROM pg_stat_user_tables WHERE relname = 'tb_card_state_log'")
        .await?;
    let report = service.run_now().await?;
    let t = report
        .tables
        .iter()
        .find(|t| t.table_name == "tb_card_state_log")
        .unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(t.rows_deleted, 100_000, "preview = run");
    // Ten full batches of 10,000, then one that finds nothing: 11 statements, 11 transactions.
    assert_eq!(t.batches, 11);
    assert_eq!(
        w.count("SELECT count(*) FROM tb_card_state_log").await?,
        321
    );
    let _ = deletes_before;
    assert!(
        service.progress().await?.is_empty(),
        "nothing running after the run"
    );
    Ok(())
}

#[tokio::test]
async fn a_failing_table_leaves_a_failed_log_and_its_rows_and_the_others_are_cleaned()
-> anyhow::Result<()> {
    let w = World::new().await?;
    only(&w, "tb_polling_manual_trigger_log", 10, 100).await?;
    configure(&w, "tb_polling_alert_history", 10, 100, true).await?;
    w.sql(
        "INSERT INTO tb_polling_manual_trigger_log (who, scope, task_types, count, created_at) \
         SELECT 'op', '{}'::jsonb, ARRAY['carddata'], 1, now() - interval '20 days' FROM generate_series(1, 250); \
         CREATE FUNCTION ops_test_refuse() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$; \
         CREATE TRIGGER ops_test_refuse BEFORE DELETE ON tb_polling_manual_trigger_log \
         FOR EACH ROW EXECUTE FUNCTION ops_test_refuse();",
    )
    .await?;
    let report = w.cleanup().run_now().await?;
    let t = report
        .tables
        .iter()
        .find(|t| t.table_name == "tb_polling_manual_trigger_log")
        .unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(t.status, "failed");
    assert!(
        t.error
            .as_deref()
            .is_some_and(|e| e.contains("refused by the test")),
        "{t:?}"
    );
    assert_eq!(
        w.count("SELECT count(*) FROM tb_polling_manual_trigger_log")
            .await?,
        250
    );
    let logs = w.cleanup().logs(Page::default()).await?;
    let failed = logs
        .items
        .iter()
        .find(|l| l.table_name == "tb_polling_manual_trigger_log")
        .unwrap_or_else(|| panic!("{logs:?}"));
    assert_eq!(failed.status, "failed");
    assert!(failed.error.is_some());
    assert!(
        report
            .tables
            .iter()
            .any(|t| t.table_name == "tb_polling_alert_history" && t.status == "completed"),
        "the other table ran: {report:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_table_not_created_yet_is_skipped_and_runs_do_not_overlap() -> anyhow::Result<()> {
    let w = World::new().await?;
    only(&w, "tb_admin_audit_log", 30, 100).await?;
    w.sql("DROP TABLE IF EXISTS tb_admin_audit_log").await?;
    let service = w.cleanup();
    let preview = service.preview().await?;
    assert!(row(&preview, "tb_admin_audit_log").note.is_some());
    let report = service.run_now().await?;
    assert_eq!(report.tables[0].status, "skipped");
    // A run in progress (its lease held) refuses a second one.
    let held = w
        .leases
        .try_acquire("data_cleanup_run", std::time::Duration::from_secs(30))
        .await?
        .ok_or_else(|| anyhow::anyhow!("lease"))?;
    assert!(matches!(
        service.start_run().await,
        Err(admin::AdminError::Conflict { .. })
    ));
    w.leases.release(held).await?;
    let started = service.start_run().await?;
    // The background run finishes and gives its lease back.
    common::wait_for(std::time::Duration::from_secs(10), || async {
        let free = w
            .leases
            .try_acquire("data_cleanup_run", std::time::Duration::from_millis(100))
            .await?
            .is_some();
        Ok(free && service.progress().await?.is_empty())
    })
    .await?;
    assert!(!started.run_id.is_empty());
    Ok(())
}

#[tokio::test]
async fn partitions_are_created_ahead_and_configs_validated() -> anyhow::Result<()> {
    let w = World::new().await?;
    let service = w.cleanup();
    // The migration made 15 months from two months back; ahead means nothing new is needed.
    assert_eq!(service.ensure_partitions(3).await?, 0);
    let month = (chrono::Utc::now() + chrono::Months::new(2)).format("%Y%m");
    w.sql(&format!("DROP TABLE tb_data_usage_record_{month}"))
        .await?;
    assert_eq!(
        service.ensure_partitions(3).await?,
        1,
        "the missing month is made again"
    );

    let bad = service
        .create(CleanupConfigInput {
            table_name: "tb_iot_card".into(),
            retention_days: 0,
            enabled: true,
            batch_size: 0,
        })
        .await;
    match bad {
        Err(admin::AdminError::Invalid(errors)) => {
            let pointers: Vec<_> = errors.iter().map(|e| e.pointer.as_str()).collect();
            assert_eq!(
                pointers,
                vec!["/table_name", "/retention_days", "/batch_size"]
            );
        }
        other => panic!("{other:?}"),
    }
    let dup = service
        .create(CleanupConfigInput {
            table_name: "tb_card_state_log".into(),
            retention_days: 10,
            enabled: true,
            batch_size: 10,
        })
        .await;
    assert!(
        matches!(dup, Err(admin::AdminError::Conflict { .. })),
        "{dup:?}"
    );
    Ok(())
}
