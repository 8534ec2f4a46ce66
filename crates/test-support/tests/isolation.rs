//! Two tests' worlds never see each other, and a world is gone once dropped.

use fred::prelude::*;
use sea_orm::{ConnectionTrait, Statement};
use test_support::TestEnv;

async fn count_devices(env: &TestEnv) -> anyhow::Result<i64> {
    let conn = &env.db.conn;
    let row = conn
        .query_one_raw(Statement::from_string(
            conn.get_database_backend(),
            "SELECT count(*) AS n FROM tb_device".to_owned(),
        ))
        .await?
        .ok_or_else(|| anyhow::anyhow!("no row"))?;
    Ok(row.try_get("", "n")?)
}

#[tokio::test]
async fn two_worlds_are_isolated() -> anyhow::Result<()> {
    let (a, b) = tokio::try_join!(TestEnv::new(), TestEnv::new())?;
    assert_ne!(a.db.name, b.db.name);
    assert_ne!(a.redis.prefix, b.redis.prefix);

    a.db.conn
        .execute_unprepared("INSERT INTO tb_device (device_no) VALUES ('only-in-a')")
        .await?;
    assert_eq!(count_devices(&a).await?, 1);
    assert_eq!(count_devices(&b).await?, 0, "a's write is invisible in b");

    let pool = a.redis.pool().await?;
    let key = format!("{}polling:init:progress", a.redis.prefix);
    let _: () = pool.set(&key, "running", None, None, false).await?;
    let pattern = format!("{}*", b.redis.prefix);
    let b_keys = test_support::keys_matching(pool.next(), &pattern).await?;
    assert!(b_keys.is_empty(), "a's keys are outside b's prefix");

    // Dropping a world removes its database and its keys.
    let name = a.db.name.clone();
    drop(a);
    let exists: i64 = pool.exists(&key).await?;
    assert_eq!(exists, 0);
    let row =
        b.db.conn
            .query_one_raw(Statement::from_string(
                b.db.conn.get_database_backend(),
                format!("SELECT count(*) AS n FROM pg_database WHERE datname = '{name}'"),
            ))
            .await?
            .ok_or_else(|| anyhow::anyhow!("no row"))?;
    assert_eq!(row.try_get::<i64>("", "n")?, 0);
    Ok(())
}

#[tokio::test]
async fn every_table_exists_in_a_fresh_world() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    for table in [
        "tb_iot_card",
        "tb_device",
        "tb_package",
        "tb_package_usage",
        "tb_polling_config",
        "tb_data_usage_record",
        "tb_card_state_log",
        "tb_polling_alert_rule",
        "tb_polling_alert_history",
        "tb_data_cleanup_config",
        "tb_data_cleanup_log",
        "tb_polling_manual_trigger_log",
        "tb_api_key",
    ] {
        env.db
            .conn
            .execute_unprepared(&format!("SELECT 1 FROM {table} LIMIT 1"))
            .await?;
    }
    Ok(())
}
