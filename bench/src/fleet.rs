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

/// How a card of the mixed fleet is drawn from its id `i` (deterministic: the same id gives the
/// same card on every run), as SQL over `i`. Shares as `cmp-worker seed` draws them.
const MIX_HASH: &str = "((i * 2654435761) % 4294967296)";

/// Empties the tables of the mixed fleet and writes its three products (ids 1 to 3).
pub(crate) async fn reset_mixed(db: &DatabaseConnection) -> anyhow::Result<()> {
    db.execute_unprepared(
        "TRUNCATE tb_data_usage_record, tb_card_state_log, tb_package_usage, tb_iot_card, \
         tb_device, tb_package, tb_polling_config RESTART IDENTITY CASCADE",
    )
    .await
    .context("truncate the fleet tables")?;
    db.execute_unprepared(
        "INSERT INTO tb_package (id, name, data_limit_mb, virtual_ratio, duration_days, reset_cycle) VALUES \
         (1, '1 GB monthly', 1024, 1, 365, 'monthly'), \
         (2, '500 MB, virtual ratio 1.25', 500, 1.25, 30, 'none'), \
         (3, 'Unlimited', NULL, 1, 30, 'none')",
    )
    .await
    .context("seed products")?;
    Ok(())
}

/// Adds cards `from..=to` of a fleet as `cmp-worker seed` writes it (bin-worker/src/seed),
/// set-based, card id = `i`: 10 % industry cards, 85 % real-named, every third card bound to
/// a device (device `i / 12 + 1`: up to four cards a device, 1 in 97 devices with polling
/// switched off), 1 in 100 cards with polling off, one package per standalone card or device
/// (60 % 1 GB monthly, 30 % 500 MB at virtual ratio 1.25, 10 % unlimited; up to 90 % used, so
/// none runs out within a run), 5 % with a renewal queued and half the not real-named ones with
/// a package waiting for real-name. Unlike the seed, the fleet is settled: a card that is not
/// real-named (and not an industry card) is already stopped for `not_realname`, as the first
/// round of polls would leave it, so that a measured window polls a steady fleet instead of a
/// wave of first stops. Deterministic: the same id gives the same card on every run.
pub(crate) async fn extend_mixed(
    db: &DatabaseConnection,
    from: u64,
    to: u64,
) -> anyhow::Result<()> {
    let h = MIX_HASH;
    let (first_device, last_device) = (from / 12 + 1, to / 12 + 1);
    db.execute_unprepared(&format!(
        "INSERT INTO tb_device (id, device_no, enable_polling) \
         SELECT i, 'DEVB' || lpad(i::text, 10, '0'), i % 97 <> 0 \
         FROM generate_series({first_device}::bigint, {last_device}::bigint) AS i \
         ON CONFLICT (id) DO NOTHING"
    ))
    .await
    .context("seed devices")?;
    let mut start = from;
    while start <= to {
        let end = (start + SEED_CHUNK - 1).min(to);
        db.execute_unprepared(&format!(
            "INSERT INTO tb_iot_card (id, iccid, msisdn, carrier_id, card_category, status, \
             real_name_status, network_status, stop_reason, enable_polling, device_id) \
             SELECT i, '8986' || lpad(i::text, 16, '0'), '1' || lpad(i::text, 10, '0'), 1 + i % 3, \
                    CASE WHEN industry THEN 'industry' ELSE 'normal' END, 1, \
                    CASE WHEN verified THEN 1 ELSE 0 END, \
                    CASE WHEN verified OR industry THEN 1 ELSE 0 END, \
                    CASE WHEN verified OR industry THEN '' ELSE 'not_realname' END, \
                    i % 100 <> 0, \
                    CASE WHEN i % 3 = 0 THEN i / 12 + 1 END \
             FROM (SELECT i, {h} % 10 = 0 AS industry, ({h} / 10) % 100 < 85 AS verified \
                   FROM generate_series({start}::bigint, {end}::bigint) AS i) AS c"
        ))
        .await
        .context("seed mixed cards")?;
        start = end + 1;
    }
    let package = |owner_cols: &str, owners: &str| {
        format!(
            "INSERT INTO tb_package_usage (iot_card_id, device_id, package_id, status, data_limit_mb, \
             virtual_ratio, used_mb, activate_on_realname, activated_at, expires_at, reset_cycle, \
             next_reset_at, reset_anchor_day) \
             SELECT {owner_cols}, p.id, s.status, p.data_limit_mb, p.virtual_ratio, \
                    CASE WHEN s.status = 'active' THEN coalesce(p.data_limit_mb * ((o.h / 10000) % 90) / 100, 0) ELSE 0 END, \
                    s.waiting, \
                    CASE WHEN s.status = 'active' THEN o.started END, \
                    CASE WHEN s.status = 'active' THEN o.started + make_interval(days => p.duration_days) END, \
                    p.reset_cycle, \
                    CASE WHEN s.status = 'active' AND p.reset_cycle = 'monthly' THEN o.started + interval '30 days' END, \
                    CASE WHEN s.status = 'active' AND p.reset_cycle = 'monthly' \
                         THEN extract(day FROM o.started + interval '30 days')::smallint END \
             FROM (SELECT id, h, now() - make_interval(days => ((h / 7) % 20)::int) AS started, \
                          CASE WHEN (h / 1000) % 10 < 6 THEN 1 WHEN (h / 1000) % 10 < 9 THEN 2 ELSE 3 END AS product, \
                          verified FROM ({owners}) AS x) AS o \
             JOIN tb_package p ON p.id = o.product \
             CROSS JOIN LATERAL (VALUES ('active', FALSE, TRUE), ('pending', FALSE, (o.h / 100) % 20 = 0), \
                                        ('pending', TRUE, NOT o.verified AND (o.h / 200) % 2 = 0)) AS s(status, waiting, wanted) \
             WHERE s.wanted"
        )
    };
    let cards = format!(
        "SELECT id, ((id * 2654435761) % 4294967296) AS h, real_name_status = 1 AS verified \
         FROM tb_iot_card WHERE device_id IS NULL AND id BETWEEN {from} AND {to}"
    );
    db.execute_unprepared(&package("o.id, NULL::bigint", &cards))
        .await
        .context("seed card packages")?;
    let devices = format!(
        "SELECT id, ((id * 2654435761) % 4294967296) AS h, TRUE AS verified FROM tb_device d \
         WHERE id BETWEEN {first_device} AND {last_device} \
         AND NOT EXISTS (SELECT 1 FROM tb_package_usage u WHERE u.device_id = d.id)"
    );
    db.execute_unprepared(&package("NULL::bigint, o.id", &devices))
        .await
        .context("seed device packages")?;
    Ok(())
}

/// The cards of the mixed fleet as the carrier sees them (the same real-name and network
/// status as the database, so polls find nothing to change), usage growing 0 to 4 MB a query.
pub(crate) fn mixed_sim_cards(from: u64, to: u64) -> Vec<gateway_sim::SimCardSpec> {
    use domain::{NetworkStatus, RealNameStatus};
    (from..=to)
        .map(|i| {
            let h = i.wrapping_mul(2_654_435_761) % 4_294_967_296;
            let industry = h % 10 == 0;
            let verified = (h / 10) % 100 < 85;
            gateway_sim::SimCardSpec {
                real_name_status: if verified {
                    RealNameStatus::Verified
                } else {
                    RealNameStatus::NotVerified
                },
                network_status: if verified || industry {
                    NetworkStatus::Online
                } else {
                    NetworkStatus::Stopped
                },
                growth_mb_per_query: Some(rust_decimal::Decimal::from((h / 100_000) % 5)),
                ..gateway_sim::SimCardSpec::new(iccid(i))
            }
        })
        .collect()
}

/// Polling switched on for the first `n` cards of the mixed fleet (still 1 in 100 off), off for
/// the rest: a smaller fleet in the same tables.
pub(crate) async fn enable_first(db: &DatabaseConnection, n: u64) -> anyhow::Result<()> {
    db.execute_unprepared(&format!(
        "UPDATE tb_iot_card SET enable_polling = (id <= {n} AND id % 100 <> 0) \
         WHERE enable_polling IS DISTINCT FROM (id <= {n} AND id % 100 <> 0)"
    ))
    .await
    .context("switch polling on for the first cards")?;
    db.execute_unprepared("VACUUM (ANALYZE) tb_iot_card, tb_package_usage, tb_device")
        .await
        .context("vacuum")?;
    Ok(())
}
