//! Fleets in PostgreSQL, written set-based (`generate_series`) so that seeding ten million
//! cards takes a minute rather than the run.

use anyhow::Context;
use domain::{Intervals, PollingConfigInput};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use std::time::Instant;

/// Rows per INSERT statement (one transaction each).
const SEED_CHUNK: u64 = 500_000;

/// The ICCID of the n-th bench card; gateway-sim is registered with the same.
pub(crate) fn iccid(n: u64) -> String {
    format!("8986{n:016}")
}

/// Empties every table the scenarios write (ids restart at 1).
pub(crate) async fn truncate(db: &DatabaseConnection) -> anyhow::Result<()> {
    db.execute_unprepared(
        "TRUNCATE tb_data_usage_record, tb_card_state_log, tb_package_usage, tb_iot_card, \
         tb_polling_config RESTART IDENTITY CASCADE",
    )
    .await
    .context("truncate the bench tables")?;
    Ok(())
}

/// `n` verified, online, polling-enabled standalone cards with ICCIDs `iccid(1..=n)`.
pub(crate) async fn seed_cards(db: &DatabaseConnection, n: u64) -> anyhow::Result<f64> {
    let started = Instant::now();
    let mut from = 1u64;
    while from <= n {
        let to = (from + SEED_CHUNK - 1).min(n);
        db.execute_unprepared(&format!(
            "INSERT INTO tb_iot_card (iccid, carrier_id, card_category, status, real_name_status, \
             network_status, enable_polling) \
             SELECT '8986' || lpad(i::text, 16, '0'), 1 + i % 3, 'normal', 1, 1, 1, TRUE \
             FROM generate_series({from}::bigint, {to}::bigint) AS i"
        ))
        .await
        .context("seed cards")?;
        from = to + 1;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// One active package per card with a limit no poll of the run can exhaust: the evaluation runs
/// in full on every poll and decides "nothing", as it does for most of a real fleet.
pub(crate) async fn seed_packages(db: &DatabaseConnection) -> anyhow::Result<()> {
    db.execute_unprepared(
        "INSERT INTO tb_package_usage (iot_card_id, status, data_limit_mb, virtual_ratio, used_mb, \
         activated_at, expires_at, reset_cycle) \
         SELECT id, 'active', 100000000, 1, 0, now() - interval '1 day', now() + interval '365 days', 'none' \
         FROM tb_iot_card",
    )
    .await
    .context("seed packages")?;
    Ok(())
}

/// Visibility map and statistics as a settled production table has them (the initializer's
/// scan is index-only only on all-visible pages).
pub(crate) async fn vacuum(db: &DatabaseConnection) -> anyhow::Result<()> {
    db.execute_unprepared("VACUUM (ANALYZE) tb_iot_card, tb_package_usage")
        .await
        .context("vacuum")?;
    Ok(())
}

/// One config matching every card, scheduling the given intervals.
pub(crate) async fn seed_config(
    stores: &store::Stores,
    intervals: Intervals,
) -> anyhow::Result<()> {
    stores
        .configs
        .insert(&PollingConfigInput {
            name: "bench: every card".to_owned(),
            priority: 1,
            enabled: true,
            card_condition: None,
            card_category: None,
            carrier_id: None,
            intervals,
        })
        .await
        .context("insert the polling config")?;
    Ok(())
}

/// Every polling-enabled card id, in id order (keyset pages).
pub(crate) async fn card_ids(db: &DatabaseConnection) -> anyhow::Result<Vec<i64>> {
    let backend = db.get_database_backend();
    let mut ids = Vec::new();
    let mut after = i64::MIN;
    loop {
        let rows = db
            .query_all_raw(Statement::from_sql_and_values(
                backend,
                "SELECT id FROM tb_iot_card WHERE enable_polling AND deleted_at IS NULL AND id > $1 \
                 ORDER BY id LIMIT 500000",
                [after.into()],
            ))
            .await
            .context("read card ids")?;
        if rows.is_empty() {
            return Ok(ids);
        }
        for row in &rows {
            ids.push(row.try_get_by_index::<i64>(0).context("card id")?);
        }
        after = *ids.last().unwrap_or(&after);
    }
}
