//! The group-committed writes of the real-name and package polls (`batch/realname.rs`,
//! `batch/package.rs`): concurrent calls, submitted in one go on a current-thread runtime, are
//! one batch. Each call must answer what it would have answered alone, in submission order,
//! and a batch that fails must write nothing.

use crate::common::{bound_card, new_card, setup};
use chrono::{Duration, SubsecRound, Utc};
use domain::{
    CardId, CarrierPackage, NewDevice, PackageOwner, PackageStatus, RealNameStatus, StoreError,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use sea_orm::ConnectionTrait;

/// A database trigger that fails every write of the card (or package) it names: the
/// statement of the batch holding it fails mid-way.
async fn fail_writes_of(db: &sea_orm::DatabaseConnection, table: &str, condition: &str) {
    db.execute_unprepared(&format!(
        "CREATE FUNCTION fail_write() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF {condition} THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$; \
         CREATE TRIGGER fail_write BEFORE INSERT OR UPDATE ON {table} \
         FOR EACH ROW EXECUTE FUNCTION fail_write()"
    ))
    .await
    .unwrap_or_else(|e| panic!("trigger: {e}"));
}

#[tokio::test]
async fn real_name_polls_of_one_batch_answer_as_if_alone_in_submission_order() -> anyhow::Result<()>
{
    let (_db, s) = setup().await?;
    let card = s.cards.insert(&new_card("89860000000000000001")).await?.id;
    let mut others = Vec::new();
    for i in 2..=40 {
        others.push(
            s.cards
                .insert(&new_card(&format!("898600000000000000{i:02}")))
                .await?
                .id,
        );
    }
    let deleted = s.cards.insert(&new_card("89860000000000000099")).await?.id;
    s.cards.soft_delete(deleted).await?;

    // One card four times (verified, verified, withdrawn, verified), 39 others once, a deleted
    // card and one that never existed: one batch.
    let mut polls: Vec<(CardId, RealNameStatus)> = vec![
        (card, RealNameStatus::Verified),
        (card, RealNameStatus::Verified),
        (card, RealNameStatus::NotVerified),
        (card, RealNameStatus::Verified),
        (deleted, RealNameStatus::Verified),
        (CardId(999_999), RealNameStatus::Verified),
    ];
    polls.extend(others.iter().map(|id| (*id, RealNameStatus::Verified)));
    let answers = futures::future::join_all(
        polls
            .iter()
            .map(|(id, status)| s.cards.set_real_name(*id, *status)),
    )
    .await;

    let changed: Vec<Option<(bool, RealNameStatus)>> = answers
        .iter()
        .map(|a| {
            a.as_ref()
                .unwrap_or_else(|e| panic!("answer: {e}"))
                .as_ref()
                .map(|w| (w.changed, w.card.facts.real_name_status))
        })
        .collect();
    assert_eq!(
        &changed[..6],
        &[
            Some((true, RealNameStatus::Verified)),
            Some((false, RealNameStatus::Verified)),
            Some((true, RealNameStatus::NotVerified)),
            Some((true, RealNameStatus::Verified)),
            None,
            None,
        ]
    );
    assert!(
        changed[6..]
            .iter()
            .all(|c| *c == Some((true, RealNameStatus::Verified)))
    );
    let stored = s.cards.get(card).await?.map(|c| c.facts.real_name_status);
    assert_eq!(stored, Some(RealNameStatus::Verified));

    // Again: nothing differs, nothing is written.
    let again = futures::future::join_all(
        others
            .iter()
            .map(|id| s.cards.set_real_name(*id, RealNameStatus::Verified)),
    )
    .await;
    for answer in again {
        let written = answer?.ok_or_else(|| anyhow::anyhow!("card gone"))?;
        assert!(!written.changed);
    }
    Ok(())
}

#[tokio::test]
async fn a_real_name_batch_that_fails_mid_way_writes_nothing() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    let first = s.cards.insert(&new_card("89860000000000000001")).await?.id;
    let refused = s.cards.insert(&new_card("89860000000000000002")).await?.id;
    fail_writes_of(
        &db.conn,
        "tb_iot_card",
        &format!("NEW.id = {}", refused.get()),
    )
    .await;

    let answers = futures::future::join_all([
        s.cards.set_real_name(first, RealNameStatus::Verified),
        s.cards.set_real_name(refused, RealNameStatus::Verified),
    ])
    .await;

    assert!(
        answers
            .iter()
            .all(|a| matches!(a, Err(StoreError::Database(_)))),
        "every poll of the batch gets the error: {answers:?}"
    );
    let stored = s.cards.get(first).await?.map(|c| c.facts.real_name_status);
    assert_eq!(
        stored,
        Some(RealNameStatus::NotVerified),
        "the other card's write rolled back"
    );
    // The next batch without the refused card goes through.
    let alone = s
        .cards
        .set_real_name(first, RealNameStatus::Verified)
        .await?;
    assert!(alone.is_some_and(|w| w.changed));
    Ok(())
}

fn package(external_id: &str, used: Decimal) -> CarrierPackage {
    let now = Utc::now().trunc_subsecs(6);
    CarrierPackage {
        external_id: external_id.into(),
        status: PackageStatus::Active,
        used_mb: used,
        limit_mb: Some(dec!(1024)),
        activated_at: Some(now - Duration::days(1)),
        expires_at: Some(now + Duration::days(30)),
    }
}

#[tokio::test]
async fn package_reports_of_one_batch_write_each_row_once_the_last_report_winning()
-> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-BATCH".into(),
            enable_polling: true,
        })
        .await?
        .id;
    let bound = [
        s.cards
            .insert(&bound_card("89860000000000000011", device))
            .await?
            .id,
        s.cards
            .insert(&bound_card("89860000000000000012", device))
            .await?
            .id,
    ];
    let alone = s.cards.insert(&new_card("89860000000000000013")).await?.id;
    let dev = PackageOwner::Device(device);
    let own = PackageOwner::Card(alone);
    let shared = package("P-DEV", dec!(10));
    let later = CarrierPackage {
        used_mb: dec!(12),
        ..shared.clone()
    };

    // Two cards of the device report its package (the second sees more usage), a standalone
    // card reports its own: one batch, one row each, the later report kept.
    let own_reports = [package("P-OWN", dec!(1))];
    let answers = futures::future::join_all([
        s.packages
            .upsert_carrier_packages(dev, std::slice::from_ref(&shared)),
        s.packages
            .upsert_carrier_packages(dev, std::slice::from_ref(&later)),
        s.packages.upsert_carrier_packages(own, &own_reports),
    ])
    .await;
    let counts: Vec<u64> = answers.into_iter().collect::<Result<_, _>>()?;
    assert_eq!(counts, vec![1, 1, 1]);
    let of_device = s.packages.usages_of(dev).await?;
    assert_eq!(of_device.len(), 1);
    assert_eq!(of_device[0].spec.used_mb, dec!(12), "the later report wins");
    assert_eq!(s.packages.usages_of(own).await?.len(), 1);

    // The same reports again: nothing differs, nothing is written.
    let again = futures::future::join_all([
        s.packages
            .upsert_carrier_packages(dev, std::slice::from_ref(&later)),
        s.packages.upsert_carrier_packages(own, &own_reports),
    ])
    .await;
    let counts: Vec<u64> = again.into_iter().collect::<Result<_, _>>()?;
    assert_eq!(counts, vec![0, 0]);
    assert_eq!(s.packages.usages_of(dev).await?, of_device);

    // The batched read of many owners is the single read of each.
    let many = s
        .packages
        .usages_of_many(&[dev, own, PackageOwner::Card(bound[0])])
        .await?;
    assert_eq!(many.get(&dev), Some(&s.packages.usages_of(dev).await?));
    assert_eq!(many.get(&own), Some(&s.packages.usages_of(own).await?));
    assert!(!many.contains_key(&PackageOwner::Card(bound[0])));
    Ok(())
}

#[tokio::test]
async fn a_package_batch_that_fails_mid_way_writes_nothing() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-FAIL".into(),
            enable_polling: true,
        })
        .await?
        .id;
    let alone = s.cards.insert(&new_card("89860000000000000021")).await?.id;
    fail_writes_of(
        &db.conn,
        "tb_package_usage",
        "NEW.external_id = 'P-REFUSED'",
    )
    .await;

    // The card's packages go first (their statement succeeds), the device's fail.
    let answers = futures::future::join_all([
        s.packages
            .upsert_carrier_packages(PackageOwner::Card(alone), &[package("P-OK", dec!(1))]),
        s.packages.upsert_carrier_packages(
            PackageOwner::Device(device),
            &[package("P-REFUSED", dec!(1))],
        ),
    ])
    .await;

    assert!(
        answers
            .iter()
            .all(|a| matches!(a, Err(StoreError::Database(_)))),
        "every poll of the batch gets the error: {answers:?}"
    );
    assert!(
        s.packages
            .usages_of(PackageOwner::Card(alone))
            .await?
            .is_empty(),
        "the card's packages rolled back"
    );
    Ok(())
}
