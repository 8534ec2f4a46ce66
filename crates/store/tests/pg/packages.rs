use crate::common::{active_usage, new_card, now, pending_usage, setup};
use chrono::Duration;
use domain::{
    CardId, CarrierPackage, DeviceId, NewDevice, NewPackage, NewPackageUsage, PackageOwner,
    PackageStatus, ResetCycle, StoreError,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use sea_orm::{ConnectionTrait, DbBackend, Statement};

const SH: chrono_tz::Tz = chrono_tz::Asia::Shanghai;

#[tokio::test]
async fn products_and_bought_packages_round_trip() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let input = NewPackage {
        name: "10G monthly".into(),
        data_limit_mb: Some(dec!(10240)),
        virtual_ratio: dec!(1.25),
        duration_days: 365,
        reset_cycle: ResetCycle::Monthly,
    };
    let product = s.packages.create_package(&input).await?;
    assert_eq!(
        s.packages.get_package(product.id).await?,
        Some(product.clone())
    );
    assert_eq!(
        (product.spec.name.as_str(), product.spec.virtual_ratio),
        ("10G monthly", dec!(1.25))
    );
    assert_eq!(product.spec.reset_cycle, ResetCycle::Monthly);

    let card = s.cards.insert(&new_card("8986000000000000001")).await?;
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: true,
        })
        .await?;
    let now = now();
    let mut on_card = active_usage(
        PackageOwner::Card(card.id),
        Some(dec!(100.5)),
        dec!(1.5),
        dec!(3.25),
        now,
        now + Duration::days(30),
    );
    on_card.package_id = Some(product.id);
    on_card.external_id = Some("EXT-1".into());
    on_card.reset_cycle = ResetCycle::Monthly;
    on_card.next_reset_at = Some(now + Duration::days(3));
    let stored = s.packages.create_usage(&on_card).await?;
    assert_eq!(stored.spec.owner, PackageOwner::Card(card.id));
    assert_eq!(stored.spec.package_id, Some(product.id));
    assert_eq!(stored.spec.data_limit_mb, Some(dec!(100.5)));
    assert_eq!(stored.spec.used_mb, dec!(3.25));
    assert_eq!(stored.spec.next_reset_at, on_card.next_reset_at);
    assert_eq!(stored.spec.activated_at, Some(now));

    let mut on_device = pending_usage(PackageOwner::Device(device.id), true);
    on_device.data_limit_mb = None;
    let bulk: Vec<NewPackageUsage> = vec![on_device.clone(), on_card.clone(), on_device];
    // The second row repeats EXT-1 on the same card: the whole batch is refused.
    assert!(matches!(
        s.packages.create_usages_bulk(&bulk).await,
        Err(StoreError::Conflict { field, .. }) if field == "external_id"
    ));
    let mut fixed = bulk;
    fixed[1].external_id = None;
    assert_eq!(s.packages.create_usages_bulk(&fixed).await?, 3);
    assert_eq!(
        s.packages
            .usages_of(PackageOwner::Card(card.id))
            .await?
            .len(),
        2
    );
    let dev = s
        .packages
        .usages_of(PackageOwner::Device(device.id))
        .await?;
    assert_eq!(dev.len(), 2);
    assert!(
        dev.iter()
            .all(|u| u.spec.data_limit_mb.is_none() && u.spec.activate_on_realname)
    );
    assert!(
        dev.iter()
            .all(|u| u.spec.status == PackageStatus::Pending && u.spec.activated_at.is_none())
    );
    Ok(())
}

#[tokio::test]
async fn the_database_refuses_a_package_with_both_or_neither_owner() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000001")).await?;
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: true,
        })
        .await?;
    let insert = |card: Option<i64>, device: Option<i64>| {
        Statement::from_sql_and_values(
            DbBackend::Postgres,
            "INSERT INTO tb_package_usage (iot_card_id, device_id) VALUES ($1, $2)",
            [card.into(), device.into()],
        )
    };
    let both = db
        .conn
        .execute_raw(insert(Some(card.id.get()), Some(device.id.get())))
        .await;
    let neither = db.conn.execute_raw(insert(None, None)).await;
    for result in [both, neither] {
        match result.map_err(store::db_err) {
            Err(StoreError::Invalid(message)) => {
                assert!(message.contains("ck_package_usage_owner"), "{message}")
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }
    // Through the store: an owner that does not exist breaks the foreign key.
    let ghost = pending_usage(PackageOwner::Card(CardId(123_456)), false);
    assert!(matches!(
        s.packages.create_usage(&ghost).await,
        Err(StoreError::Invalid(_))
    ));
    // A CHECK: the ratio must be at least 1.
    let mut bad = pending_usage(PackageOwner::Card(card.id), false);
    bad.virtual_ratio = dec!(0.5);
    assert!(matches!(
        s.packages.create_usage(&bad).await,
        Err(StoreError::Invalid(_))
    ));
    Ok(())
}

#[tokio::test]
async fn deduct_alone_charges_valid_packages_of_a_device() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let now = now();
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: true,
        })
        .await?;
    let owner = PackageOwner::Device(device.id);
    let p = s
        .packages
        .create_usage(&active_usage(
            owner,
            None,
            dec!(1),
            dec!(0),
            now - Duration::hours(1),
            now + Duration::days(1),
        ))
        .await?;
    let steps = s.packages.deduct_data_usage(owner, dec!(12.5), now).await?;
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].id, steps[0].real_mb), (p.id, dec!(12.5)));
    assert!(
        s.packages
            .deduct_data_usage(owner, dec!(0), now)
            .await?
            .is_empty()
    );
    // No valid package: nothing to charge, no error.
    assert!(
        s.packages
            .deduct_data_usage(PackageOwner::Device(DeviceId(9)), dec!(5), now)
            .await?
            .is_empty()
    );
    assert_eq!(
        s.packages.usages_of(owner).await?[0].spec.used_mb,
        dec!(12.5)
    );
    Ok(())
}

#[tokio::test]
async fn expiry_activates_the_next_pending_package_from_now() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let now = now();
    let product = s
        .packages
        .create_package(&NewPackage {
            name: "30 days".into(),
            data_limit_mb: Some(dec!(1024)),
            virtual_ratio: dec!(1),
            duration_days: 30,
            reset_cycle: ResetCycle::None,
        })
        .await?;
    let mut cards = Vec::new();
    for i in 0..4 {
        cards.push(
            s.cards
                .insert(&new_card(&format!("898600000000000000{i}")))
                .await?
                .id,
        );
    }
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: true,
        })
        .await?;
    let expired = |owner| {
        active_usage(
            owner,
            Some(dec!(10)),
            dec!(1),
            dec!(0),
            now - Duration::days(30),
            now - Duration::minutes(1),
        )
    };

    // A: expired + two queued packages: the older one (with a product) takes over.
    let a = PackageOwner::Card(cards[0]);
    let a_old = s.packages.create_usage(&expired(a)).await?;
    let mut queued = pending_usage(a, false);
    queued.package_id = Some(product.id);
    let a_next = s.packages.create_usage(&queued).await?;
    let a_later = s.packages.create_usage(&pending_usage(a, false)).await?;
    // B: expired, nothing queued.
    let b = PackageOwner::Card(cards[1]);
    s.packages.create_usage(&expired(b)).await?;
    // C: expired, only a package waiting for real-name.
    let c = PackageOwner::Card(cards[2]);
    s.packages.create_usage(&expired(c)).await?;
    let c_waiting = s.packages.create_usage(&pending_usage(c, true)).await?;
    // D: expired but still covered by another valid package: its pending one waits.
    let d = PackageOwner::Card(cards[3]);
    s.packages.create_usage(&expired(d)).await?;
    s.packages
        .create_usage(&active_usage(
            d,
            Some(dec!(10)),
            dec!(1),
            dec!(0),
            now - Duration::days(1),
            now + Duration::days(1),
        ))
        .await?;
    let d_pending = s.packages.create_usage(&pending_usage(d, false)).await?;
    // E (a device): expired + a queued package without product that carries a 7-day window.
    let e = PackageOwner::Device(device.id);
    s.packages.create_usage(&expired(e)).await?;
    let mut windowed = pending_usage(e, false);
    windowed.activated_at = Some(now - Duration::days(100));
    windowed.expires_at = Some(now - Duration::days(93));
    let e_next = s.packages.create_usage(&windowed).await?;
    // F: a pending package of an owner whose packages did not expire now: untouched.
    let f_card = s.cards.insert(&new_card("8986000000000000099")).await?.id;
    let f_pending = s
        .packages
        .create_usage(&pending_usage(PackageOwner::Card(f_card), false))
        .await?;

    let mut touched = s.packages.expire_and_activate(now, SH, 1000).await?.owners;
    touched.sort_by_key(|o| format!("{o:?}"));
    let mut want = vec![a, b, c, d, e];
    want.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(touched, want);

    let get = |owner, id| {
        let s = s.clone();
        async move {
            s.packages
                .usages_of(owner)
                .await?
                .into_iter()
                .find(|u| u.id == id)
                .ok_or_else(|| anyhow::anyhow!("package {id} gone"))
        }
    };
    assert_eq!(get(a, a_old.id).await?.spec.status, PackageStatus::Expired);
    let activated = get(a, a_next.id).await?;
    assert_eq!(activated.spec.status, PackageStatus::Active);
    assert_eq!(activated.spec.activated_at, Some(now));
    assert_eq!(
        activated.spec.expires_at,
        Some(now + Duration::days(30)),
        "product duration"
    );
    assert!(activated.is_valid_at(now));
    assert_eq!(
        get(a, a_later.id).await?.spec.status,
        PackageStatus::Pending
    );
    assert!(
        s.packages
            .usages_of(b)
            .await?
            .iter()
            .all(|u| u.spec.status == PackageStatus::Expired)
    );
    assert_eq!(
        get(c, c_waiting.id).await?.spec.status,
        PackageStatus::Pending,
        "waits for real-name"
    );
    assert_eq!(
        get(d, d_pending.id).await?.spec.status,
        PackageStatus::Pending
    );
    let e_active = get(e, e_next.id).await?;
    assert_eq!(e_active.spec.status, PackageStatus::Active);
    assert_eq!(
        e_active.spec.expires_at,
        Some(now + Duration::days(7)),
        "keeps its own span"
    );
    assert_eq!(
        get(PackageOwner::Card(f_card), f_pending.id)
            .await?
            .spec
            .status,
        PackageStatus::Pending
    );

    assert!(
        s.packages
            .expire_and_activate(now, SH, 1000)
            .await?
            .owners
            .is_empty(),
        "nothing left to do"
    );

    // First real-name: C's waiting package becomes active; no product, no window: 30 days.
    assert_eq!(s.packages.activate_on_realname(c, now, SH).await?, 1);
    let c_active = get(c, c_waiting.id).await?;
    assert_eq!(c_active.spec.status, PackageStatus::Active);
    assert_eq!(c_active.spec.expires_at, Some(now + Duration::days(30)));
    assert_eq!(s.packages.activate_on_realname(c, now, SH).await?, 0);
    Ok(())
}

#[tokio::test]
async fn monthly_reset_clears_due_packages_and_moves_their_date() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let now = now();
    let card = s.cards.insert(&new_card("8986000000000000001")).await?.id;
    let other = s.cards.insert(&new_card("8986000000000000002")).await?.id;
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: true,
        })
        .await?
        .id;
    let monthly = |owner, next: chrono::DateTime<chrono::Utc>| NewPackageUsage {
        reset_cycle: ResetCycle::Monthly,
        next_reset_at: Some(next),
        ..active_usage(
            owner,
            Some(dec!(100)),
            dec!(1),
            dec!(50),
            now - Duration::days(40),
            now + Duration::days(300),
        )
    };
    let due = now - Duration::hours(1);
    let p_due = s
        .packages
        .create_usage(&monthly(PackageOwner::Card(card), due))
        .await?;
    let p_dev = s
        .packages
        .create_usage(&monthly(PackageOwner::Device(device), due))
        .await?;
    let p_later = s
        .packages
        .create_usage(&monthly(PackageOwner::Card(other), now + Duration::days(2)))
        .await?;
    let mut once = active_usage(
        PackageOwner::Card(other),
        Some(dec!(100)),
        dec!(1),
        dec!(50),
        now - Duration::days(1),
        now + Duration::days(9),
    );
    once.next_reset_at = Some(due);
    let p_none = s.packages.create_usage(&once).await?;

    let mut touched = s.packages.reset_monthly(now, SH, 1000).await?.owners;
    touched.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(
        touched,
        vec![PackageOwner::Card(card), PackageOwner::Device(device)]
    );

    let find = |list: Vec<domain::PackageUsage>, id| list.into_iter().find(|u| u.id == id);
    let reset = find(
        s.packages.usages_of(PackageOwner::Card(card)).await?,
        p_due.id,
    )
    .ok_or_else(|| anyhow::anyhow!("gone"))?;
    assert_eq!(reset.spec.used_mb, Decimal::ZERO);
    assert_eq!(
        reset.spec.next_reset_at,
        Some(domain::calendar::add_months_anchored(
            due,
            1,
            domain::calendar::local_day(due, &SH),
            &SH
        ))
    );
    let dev = find(
        s.packages.usages_of(PackageOwner::Device(device)).await?,
        p_dev.id,
    )
    .ok_or_else(|| anyhow::anyhow!("gone"))?;
    assert_eq!(dev.spec.used_mb, Decimal::ZERO);
    let others = s.packages.usages_of(PackageOwner::Card(other)).await?;
    assert_eq!(
        find(others.clone(), p_later.id).map(|u| u.spec.used_mb),
        Some(dec!(50))
    );
    assert_eq!(
        find(others, p_none.id).map(|u| u.spec.used_mb),
        Some(dec!(50)),
        "not a monthly package"
    );
    assert!(
        s.packages
            .reset_monthly(now, SH, 1000)
            .await?
            .owners
            .is_empty()
    );
    Ok(())
}

#[tokio::test]
async fn carrier_packages_are_inserted_then_updated_by_external_id() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let now = now();
    let card = s.cards.insert(&new_card("8986000000000000001")).await?.id;
    let owner = PackageOwner::Card(card);
    let report = |used: Decimal| {
        vec![
            CarrierPackage {
                external_id: "C-1".into(),
                status: PackageStatus::Active,
                used_mb: used,
                limit_mb: Some(dec!(1024)),
                activated_at: Some(now - Duration::days(1)),
                expires_at: Some(now + Duration::days(29)),
            },
            CarrierPackage {
                external_id: "C-2".into(),
                status: PackageStatus::Pending,
                used_mb: dec!(0),
                limit_mb: None,
                activated_at: None,
                expires_at: None,
            },
        ]
    };
    assert_eq!(
        s.packages
            .upsert_carrier_packages(owner, &report(dec!(10)))
            .await?,
        2
    );
    let first = s.packages.usages_of(owner).await?;
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].spec.external_id.as_deref(), Some("C-1"));
    assert_eq!(first[0].spec.used_mb, dec!(10));
    assert_eq!(first[1].spec.data_limit_mb, None);

    // C-1 moved on, C-2 did not: one row written, no duplicate.
    assert_eq!(
        s.packages
            .upsert_carrier_packages(owner, &report(dec!(25.5)))
            .await?,
        1
    );
    let second = s.packages.usages_of(owner).await?;
    assert_eq!(second.len(), 2);
    assert_eq!(second[0].id, first[0].id);
    assert_eq!(second[0].spec.used_mb, dec!(25.5));

    // The same external id on a device is another package.
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: true,
        })
        .await?
        .id;
    let dev = PackageOwner::Device(device);
    assert_eq!(
        s.packages
            .upsert_carrier_packages(dev, &report(dec!(1)))
            .await?,
        2
    );
    // A report repeating an external id keeps the last one.
    let mut twice = report(dec!(2));
    twice.push(CarrierPackage {
        used_mb: dec!(3),
        ..twice[0].clone()
    });
    assert_eq!(s.packages.upsert_carrier_packages(dev, &twice).await?, 1);
    assert_eq!(s.packages.usages_of(dev).await?[0].spec.used_mb, dec!(3));
    assert_eq!(s.packages.upsert_carrier_packages(dev, &[]).await?, 0);
    Ok(())
}
