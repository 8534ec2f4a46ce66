//! The calendar of the package jobs against PostgreSQL whose session zone is UTC, with the
//! deployment's zone `Asia/Shanghai` (`CMP_TIMEZONE`): resets anchored on the package's day
//! and clamped per month, expiry in local days, bounded batches, the usage partitions.

use crate::common::{active_usage, new_card, setup};
use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Asia::Shanghai;
use chrono_tz::Europe::Berlin;
use chrono_tz::Tz;
use domain::{NewPackage, NewPackageUsage, PackageOwner, PackageStatus, ResetCycle};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use store::Stores;

fn local(tz: Tz, y: i32, m: u32, d: u32, h: u32, min: u32) -> anyhow::Result<DateTime<Utc>> {
    tz.with_ymd_and_hms(y, m, d, h, min, 0)
        .single()
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| anyhow::anyhow!("no such local time"))
}

/// A monthly package of a new card, active for a year around `due`, with 50 MB used.
async fn monthly(s: &Stores, iccid: &str, due: DateTime<Utc>) -> anyhow::Result<PackageOwner> {
    let card = s.cards.insert(&new_card(iccid)).await?.id;
    let owner = PackageOwner::Card(card);
    s.packages
        .create_usage(&NewPackageUsage {
            reset_cycle: ResetCycle::Monthly,
            next_reset_at: Some(due),
            ..active_usage(
                owner,
                Some(dec!(100)),
                dec!(1),
                dec!(50),
                due - Duration::days(400),
                due + Duration::days(400),
            )
        })
        .await?;
    Ok(owner)
}

async fn only_package(s: &Stores, owner: PackageOwner) -> anyhow::Result<domain::PackageUsage> {
    s.packages
        .usages_of(owner)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no package"))
}

#[tokio::test]
async fn session_zone_is_utc_and_a_shanghai_december_reset_moves_to_january_first()
-> anyhow::Result<()> {
    let (db, s) = setup().await?;
    let row = db
        .conn
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT current_setting('TimeZone') AS tz",
        ))
        .await?
        .ok_or_else(|| anyhow::anyhow!("no row"))?;
    let zone: String = row.try_get("", "tz")?;
    assert_eq!(
        zone, "UTC",
        "the bug needs a session zone other than Shanghai"
    );

    let due = local(Shanghai, 2026, 12, 1, 0, 0)?;
    let owner = monthly(&s, "8986000000000000001", due).await?;
    let now = due + Duration::seconds(30);
    let batch = s.packages.reset_monthly(now, Shanghai, 1000).await?;
    assert_eq!((batch.rows, batch.owners), (1, vec![owner]));
    let reset = only_package(&s, owner).await?;
    assert_eq!(reset.spec.used_mb, Decimal::ZERO);
    // Before: 2026-12-31 00:00 Shanghai (a month added to 2026-11-30 16:00 UTC in UTC).
    assert_eq!(
        reset.spec.next_reset_at,
        Some(local(Shanghai, 2027, 1, 1, 0, 0)?)
    );
    Ok(())
}

#[tokio::test]
async fn an_activation_on_the_31st_resets_on_every_month_end_without_drift() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000001")).await?.id;
    let owner = PackageOwner::Card(card);
    let product = s
        .packages
        .create_package(&NewPackage {
            name: "1G monthly".into(),
            data_limit_mb: Some(dec!(1024)),
            virtual_ratio: dec!(1),
            duration_days: 365,
            reset_cycle: ResetCycle::Monthly,
        })
        .await?;
    let activated = local(Shanghai, 2027, 1, 31, 10, 0)?;
    s.packages
        .create_usage(&NewPackageUsage {
            package_id: Some(product.id),
            status: PackageStatus::Pending,
            activate_on_realname: true,
            activated_at: None,
            expires_at: None,
            reset_cycle: ResetCycle::Monthly,
            next_reset_at: None,
            ..active_usage(
                owner,
                Some(dec!(1024)),
                dec!(1),
                dec!(0),
                activated,
                activated,
            )
        })
        .await?;
    assert_eq!(
        s.packages
            .activate_on_realname(owner, activated, Shanghai)
            .await?,
        1
    );
    let active = only_package(&s, owner).await?;
    assert_eq!(
        active.spec.next_reset_at,
        Some(local(Shanghai, 2027, 2, 28, 10, 0)?)
    );
    assert_eq!(
        active.spec.expires_at,
        Some(local(Shanghai, 2028, 1, 31, 10, 0)?),
        "365 local days"
    );
    // Each reset from the one before: Feb 28 -> Mar 31 (not Mar 28) -> Apr 30 -> May 31.
    let mut expected = Vec::new();
    let mut seen = Vec::new();
    for (y, m, d) in [(2027, 3, 31), (2027, 4, 30), (2027, 5, 31), (2027, 6, 30)] {
        let due = only_package(&s, owner)
            .await?
            .spec
            .next_reset_at
            .ok_or_else(|| anyhow::anyhow!("no reset date"))?;
        assert_eq!(s.packages.reset_monthly(due, Shanghai, 1000).await?.rows, 1);
        seen.push(only_package(&s, owner).await?.spec.next_reset_at);
        expected.push(Some(local(Shanghai, y, m, d, 10, 0)?));
    }
    assert_eq!(seen, expected);
    Ok(())
}

#[tokio::test]
async fn after_downtime_a_package_is_reset_once_up_to_the_next_boundary() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let due = local(Shanghai, 2028, 1, 31, 0, 0)?;
    let owner = monthly(&s, "8986000000000000001", due).await?;
    // Down from Jan 30 to Mar 10 2028 (a leap year): the Jan 31 and Feb 29 boundaries passed.
    let now = local(Shanghai, 2028, 3, 10, 12, 0)?;
    assert_eq!(s.packages.reset_monthly(now, Shanghai, 1000).await?.rows, 1);
    let reset = only_package(&s, owner).await?;
    assert_eq!(
        reset.spec.next_reset_at,
        Some(local(Shanghai, 2028, 3, 31, 0, 0)?)
    );
    assert_eq!(
        s.packages.reset_monthly(now, Shanghai, 1000).await?.rows,
        0,
        "not reset twice"
    );
    // A row written before the anchor column (anchor NULL, already clamped to Feb 29) takes
    // its own day as the anchor.
    let old = monthly(
        &s,
        "8986000000000000002",
        local(Shanghai, 2028, 2, 29, 0, 0)?,
    )
    .await?;
    s.packages.reset_monthly(now, Shanghai, 1000).await?;
    assert_eq!(
        only_package(&s, old).await?.spec.next_reset_at,
        Some(local(Shanghai, 2028, 3, 29, 0, 0)?)
    );
    Ok(())
}

#[tokio::test]
async fn reset_and_expiry_run_in_bounded_batches() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let due = local(Shanghai, 2026, 6, 1, 0, 0)?;
    for i in 0..5 {
        monthly(&s, &format!("898600000000000010{i}"), due).await?;
    }
    let now = due + Duration::minutes(1);
    let rows: Vec<u64> = [
        s.packages.reset_monthly(now, Shanghai, 2).await?.rows,
        s.packages.reset_monthly(now, Shanghai, 2).await?.rows,
        s.packages.reset_monthly(now, Shanghai, 2).await?.rows,
        s.packages.reset_monthly(now, Shanghai, 2).await?.rows,
    ]
    .to_vec();
    assert_eq!(rows, vec![2, 2, 1, 0]);

    // Five packages expiring: batches of 2 expire 2, 2, 1 and report their owners.
    let later = now + Duration::days(500);
    let mut expired = Vec::new();
    let mut owners = 0;
    loop {
        let batch = s.packages.expire_and_activate(later, Shanghai, 2).await?;
        owners += batch.owners.len();
        expired.push(batch.rows);
        if batch.rows < 2 {
            break;
        }
    }
    assert_eq!(expired, vec![2, 2, 1]);
    assert_eq!(owners, 5);
    Ok(())
}

#[tokio::test]
async fn package_days_are_local_days_across_daylight_saving() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000001")).await?.id;
    let owner = PackageOwner::Card(card);
    let product = s
        .packages
        .create_package(&NewPackage {
            name: "10 days".into(),
            data_limit_mb: None,
            virtual_ratio: dec!(1),
            duration_days: 10,
            reset_cycle: ResetCycle::None,
        })
        .await?;
    let now = local(Berlin, 2026, 3, 25, 12, 0)?;
    s.packages
        .create_usage(&NewPackageUsage {
            package_id: Some(product.id),
            status: PackageStatus::Pending,
            activate_on_realname: true,
            activated_at: None,
            expires_at: None,
            ..active_usage(owner, None, dec!(1), dec!(0), now, now)
        })
        .await?;
    s.packages.activate_on_realname(owner, now, Berlin).await?;
    // Berlin springs forward on March 29: ten local days are 239 hours, ending at noon.
    assert_eq!(
        only_package(&s, owner).await?.spec.expires_at,
        Some(local(Berlin, 2026, 4, 4, 12, 0)?)
    );
    Ok(())
}

#[tokio::test]
async fn usage_partitions_are_created_ahead_once() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    // The migration created 15 months from two months before it ran; far ahead nothing exists.
    let from = NaiveDate::from_ymd_opt(2031, 11, 1).ok_or_else(|| anyhow::anyhow!("date"))?;
    assert_eq!(s.cleanup.ensure_usage_partitions(from, 3).await?, 3);
    assert_eq!(
        s.cleanup.ensure_usage_partitions(from, 3).await?,
        0,
        "idempotent"
    );
    let row = db
        .conn
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT to_regclass('tb_data_usage_record_203201')::text AS name",
        ))
        .await?
        .ok_or_else(|| anyhow::anyhow!("no row"))?;
    let name: Option<String> = row.try_get("", "name")?;
    assert_eq!(name.as_deref(), Some("tb_data_usage_record_203201"));
    Ok(())
}
