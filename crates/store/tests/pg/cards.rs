use crate::common::{active_usage, bound_card, new_card, now, setup};
use chrono::{Duration, NaiveDate};
use domain::store::Page;
use domain::{
    CardFilter, CardId, CarrierId, GatewayOutcome, MonthCounters, MonthUsage, NetworkStatus,
    NewCardStateLog, NewDevice, PackageOwner, RealNameStatus, StopReason, StoreError,
    apply_month_total,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use sea_orm::{ConnectionTrait, DbBackend, Statement};

#[tokio::test]
async fn card_round_trip_and_updates() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: true,
        })
        .await?;
    let mut input = new_card("8986000000000000001");
    input.msisdn = Some("13800000001".into());
    input.carrier_id = CarrierId(7);
    let card = s.cards.insert(&input).await?;
    assert_eq!(card.facts.iccid, input.iccid);
    assert_eq!(card.facts.msisdn, input.msisdn);
    assert_eq!(card.stop_reason, None);
    assert_eq!(card.data_usage_mb, Decimal::ZERO);
    assert_eq!(s.cards.get(card.id).await?, Some(card.clone()));

    let other = s
        .cards
        .insert(&bound_card("8986000000000000002", device.id))
        .await?;
    assert_eq!(
        s.cards
            .get_many(&[other.id, card.id, CardId(999_999)])
            .await?
            .len(),
        2
    );
    assert_eq!(s.cards.count().await?, 2);
    assert_eq!(s.cards.ids_of_devices(&[device.id]).await?, vec![other.id]);

    let by_carrier = CardFilter {
        carrier_id: Some(CarrierId(7)),
        ..CardFilter::default()
    };
    let page = s.cards.list(&by_carrier, Page::new(1, 10)).await?;
    assert_eq!((page.total, page.items.len()), (1, 1));
    assert_eq!(page.items[0].id, card.id);
    let all = s.cards.list_ids(&CardFilter::default(), None, 10).await?;
    assert_eq!(all, vec![card.id, other.id]);
    assert_eq!(
        s.cards
            .list_ids(&CardFilter::default(), Some(card.id), 10)
            .await?,
        vec![other.id]
    );

    let first_write = s
        .cards
        .set_real_name(card.id, RealNameStatus::Verified)
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert!(first_write.changed);
    assert_eq!(
        first_write.card.facts.real_name_status,
        RealNameStatus::Verified
    );
    assert!(
        !s.cards
            .set_real_name(card.id, RealNameStatus::Verified)
            .await?
            .ok_or_else(|| anyhow::anyhow!("card gone"))?
            .changed,
        "unchanged"
    );
    assert!(
        !s.cards
            .set_enable_polling(card.id, false)
            .await?
            .facts
            .enable_polling
    );
    assert_eq!(s.cards.set_status(card.id, 3).await?.facts.status, 3);
    assert_eq!(
        s.cards
            .set_device(card.id, Some(device.id))
            .await?
            .facts
            .device_id,
        Some(device.id)
    );
    assert_eq!(
        s.cards.set_device(card.id, None).await?.facts.device_id,
        None
    );
    let reread = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert_eq!(reread.facts.real_name_status, RealNameStatus::Verified);
    assert!(reread.updated_at >= card.updated_at);

    assert!(s.cards.soft_delete(card.id).await?);
    assert!(!s.cards.soft_delete(card.id).await?, "already deleted");
    assert_eq!(
        s.cards.get(card.id).await?,
        None,
        "soft-deleted cards are invisible"
    );
    assert_eq!(s.cards.count().await?, 1);
    assert!(
        s.cards
            .set_real_name(card.id, RealNameStatus::NotVerified)
            .await?
            .is_none()
    );
    assert!(matches!(
        s.cards.set_status(card.id, 1).await,
        Err(StoreError::NotFound { .. })
    ));
    Ok(())
}

#[tokio::test]
async fn duplicate_iccid_is_a_conflict_on_iccid_and_bad_device_is_invalid() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000001")).await?;
    match s.cards.insert(&new_card("8986000000000000001")).await {
        Err(StoreError::Conflict { field, .. }) => assert_eq!(field, "iccid"),
        other => panic!("expected a conflict on iccid, got {other:?}"),
    }
    // The same iccid may come back once the first card is deleted (partial unique index).
    s.cards.soft_delete(card.id).await?;
    s.cards.insert(&new_card("8986000000000000001")).await?;

    let mut orphan = new_card("8986000000000000009");
    orphan.device_id = Some(domain::DeviceId(424_242));
    assert!(matches!(
        s.cards.insert(&orphan).await,
        Err(StoreError::Invalid(_))
    ));
    Ok(())
}

#[tokio::test]
async fn state_change_updates_the_card_and_appends_its_log_row() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let card = s.cards.insert(&new_card("8986000000000000001")).await?;
    let entry = NewCardStateLog {
        card_id: card.id,
        from_status: NetworkStatus::Online,
        to_status: NetworkStatus::Stopped,
        stop_reason: Some(StopReason::NoPackage),
        trigger: "carddata".into(),
        gateway_outcome: GatewayOutcome::Ok,
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
    };
    s.cards.record_state_change(&entry).await?;
    let after = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert_eq!(after.facts.network_status, NetworkStatus::Stopped);
    assert_eq!(after.stop_reason, Some(StopReason::NoPackage));

    let resume = NewCardStateLog {
        from_status: NetworkStatus::Stopped,
        to_status: NetworkStatus::Online,
        stop_reason: None,
        trigger: "package_activation".into(),
        ..entry.clone()
    };
    s.cards.record_state_change(&resume).await?;
    let after = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert_eq!(
        (after.facts.network_status, after.stop_reason),
        (NetworkStatus::Online, None)
    );

    let log = s.cards.state_log(card.id, Page::new(1, 10)).await?;
    assert_eq!(log.total, 2);
    assert_eq!(log.items[0].entry, resume, "newest first");
    assert_eq!(log.items[1].entry, entry);

    // A missing card: nothing is written, not even the log row.
    let ghost = NewCardStateLog {
        card_id: CardId(987_654),
        ..entry
    };
    assert!(matches!(
        s.cards.record_state_change(&ghost).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(
        s.cards
            .state_log(CardId(987_654), Page::default())
            .await?
            .total,
        0
    );
    Ok(())
}

fn date(y: i32, m: u32, d: u32) -> anyhow::Result<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, d).ok_or_else(|| anyhow::anyhow!("bad date"))
}

#[tokio::test]
async fn record_usage_rolls_over_and_deducts_across_two_packages() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    let now = now();
    let card = s.cards.insert(&new_card("8986000000000000001")).await?;
    let owner = PackageOwner::Card(card.id);
    // Expires first: 10 MB of room at ratio 1.
    let first = s
        .packages
        .create_usage(&active_usage(
            owner,
            Some(dec!(100)),
            dec!(1),
            dec!(90),
            now - Duration::days(1),
            now + Duration::days(5),
        ))
        .await?;
    // Expires last: 50 real MB of room at ratio 2; takes the overage.
    let last = s
        .packages
        .create_usage(&active_usage(
            owner,
            Some(dec!(100)),
            dec!(2),
            dec!(0),
            now - Duration::days(1),
            now + Duration::days(10),
        ))
        .await?;
    // An expired package is never charged.
    s.packages
        .create_usage(&active_usage(
            owner,
            Some(dec!(100)),
            dec!(1),
            dec!(0),
            now - Duration::days(9),
            now - Duration::days(1),
        ))
        .await?;

    // March's counters, then the carrier reports April: 500 MB.
    db.conn
        .execute_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "UPDATE tb_iot_card SET current_month_start_date = '2026-03-01', \
             current_month_usage_mb = 820, last_gateway_total_mb = 820, \
             last_month_total_mb = 700 WHERE id = $1",
            [card.id.get().into()],
        ))
        .await?;
    let before = MonthCounters {
        current_month_start_date: Some(date(2026, 3, 1)?),
        current_month_usage_mb: dec!(820),
        last_gateway_total_mb: dec!(820),
        last_month_total_mb: dec!(700),
        streamed_ahead_mb: dec!(0),
    };
    let april = |day, total| -> anyhow::Result<MonthUsage> {
        Ok(MonthUsage {
            month: date(2026, 4, day)?,
            month_total_mb: total,
        })
    };
    let update = apply_month_total(&before, &april(2, dec!(500))?);
    assert!(update.rolled_over);
    let recorded = s
        .cards
        .record_usage(
            card.id,
            &april(2, dec!(500))?,
            now + Duration::seconds(2),
            now + Duration::seconds(2) + Duration::milliseconds(1),
        )
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert_eq!(
        recorded.update.as_ref(),
        Some(&update),
        "applied to the row's counters"
    );
    assert_eq!(
        recorded.card.usage, update.counters,
        "the card after the write"
    );
    // The valid packages come back as they are after the deduction.
    let after: Vec<_> = recorded
        .valid_packages
        .clone()
        .expect("read for the deduction")
        .into_iter()
        .map(|p| (p.id, p.spec.used_mb))
        .collect();
    let stored: Vec<_> = s
        .packages
        .usages_of(owner)
        .await?
        .into_iter()
        .filter(|p| p.is_valid_at(now))
        .map(|p| (p.id, p.spec.used_mb))
        .collect();
    assert_eq!(after.len(), stored.len());
    for pair in &after {
        assert!(stored.contains(pair), "{pair:?} as stored");
    }
    let steps = recorded.steps;
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].id, first.id);
    assert_eq!(steps[0].real_mb, dec!(10));
    assert_eq!(steps[1].id, last.id);
    assert_eq!(
        steps[1].real_mb,
        dec!(490),
        "50 of room plus 440 of overage"
    );
    assert_eq!(steps.iter().map(|s| s.real_mb).sum::<Decimal>(), dec!(500));

    let usages = s.packages.usages_of(owner).await?;
    let used = |id| usages.iter().find(|u| u.id == id).map(|u| u.spec.used_mb);
    assert_eq!(used(first.id), Some(dec!(100)));
    assert_eq!(used(last.id), Some(dec!(980)));

    let after = s
        .cards
        .get(card.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert_eq!(after.usage, update.counters);
    assert_eq!(after.usage.last_month_total_mb, dec!(820));
    assert_eq!(
        after.usage.current_month_start_date,
        Some(date(2026, 4, 1)?)
    );
    assert_eq!(after.data_usage_mb, dec!(500));

    // Same month, 530: a delta of 30 lands on the last package.
    let steps = s
        .cards
        .record_usage(
            card.id,
            &april(20, dec!(530))?,
            now + Duration::seconds(20),
            now + Duration::seconds(20) + Duration::milliseconds(1),
        )
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?
        .steps;
    assert_eq!(steps.len(), 1);
    assert_eq!(
        (steps[0].id, steps[0].real_mb, steps[0].add_virtual_mb),
        (last.id, dec!(30), dec!(60))
    );
    // The same report again: nothing new, no record row, no step — whoever reported it first.
    let again = s
        .cards
        .record_usage(
            card.id,
            &april(21, dec!(530))?,
            now + Duration::seconds(21),
            now + Duration::seconds(21) + Duration::milliseconds(1),
        )
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert!(again.update.is_none() && again.steps.is_empty());
    // A lower report is a carrier correction (`docs/rules.md`, "Month rollover"): nothing counted,
    // lifetime usage kept, the baseline rebased to the carrier's figure.
    let stale = s
        .cards
        .record_usage(
            card.id,
            &april(21, dec!(510))?,
            now + Duration::seconds(21),
            now + Duration::seconds(21) + Duration::milliseconds(1),
        )
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert_eq!(stale.update.map(|u| u.delta_mb), Some(Decimal::ZERO));
    // An answer received before the one the counters follow (a slow poll overtaken by a
    // newer one) changes nothing at all, however it compares.
    let overtaken = s
        .cards
        .record_usage(
            card.id,
            &april(21, dec!(600))?,
            now + Duration::seconds(19),
            now + Duration::seconds(19) + Duration::milliseconds(1),
        )
        .await?
        .ok_or_else(|| anyhow::anyhow!("card gone"))?;
    assert!(overtaken.stale && overtaken.update.is_none());
    assert_eq!(
        s.cards.get(card.id).await?.map(|c| c.data_usage_mb),
        Some(dec!(530))
    );

    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT delta_mb, month_total_mb, recorded_at FROM tb_data_usage_record \
             WHERE iot_card_id = $1 ORDER BY id",
            [card.id.get().into()],
        ))
        .await?;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].try_get::<Decimal>("", "delta_mb")?, dec!(500));
    assert_eq!(rows[0].try_get::<Decimal>("", "month_total_mb")?, dec!(500));
    assert_eq!(
        rows[0].try_get::<chrono::DateTime<chrono::Utc>>("", "recorded_at")?,
        now + Duration::seconds(2) + Duration::milliseconds(1)
    );
    assert_eq!(rows[1].try_get::<Decimal>("", "delta_mb")?, dec!(30));

    // A deleted card is refused and nothing is charged.
    s.cards.soft_delete(card.id).await?;
    assert!(
        s.cards
            .record_usage(
                card.id,
                &april(22, dec!(560))?,
                now + Duration::seconds(22),
                now + Duration::seconds(22) + Duration::milliseconds(1)
            )
            .await?
            .is_none()
    );
    assert_eq!(
        s.packages
            .usages_of(owner)
            .await?
            .iter()
            .map(|u| u.spec.used_mb)
            .sum::<Decimal>(),
        dec!(1140)
    );
    Ok(())
}

#[tokio::test]
async fn device_round_trip_and_soft_delete_unbinds_cards() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let on = s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: true,
        })
        .await?;
    assert_eq!(s.devices.get(on.id).await?, Some(on.clone()));
    match s
        .devices
        .insert(&NewDevice {
            device_no: "D-1".into(),
            enable_polling: false,
        })
        .await
    {
        Err(StoreError::Conflict { field, .. }) => assert_eq!(field, "device_no"),
        other => panic!("expected a conflict on device_no, got {other:?}"),
    }
    let ids = s
        .devices
        .insert_bulk(&[
            NewDevice {
                device_no: "D-3".into(),
                enable_polling: false,
            },
            NewDevice {
                device_no: "D-2".into(),
                enable_polling: true,
            },
        ])
        .await?;
    assert_eq!(ids.len(), 2);
    assert_eq!(
        s.devices.get(ids[0]).await?.map(|d| d.device_no),
        Some("D-3".into())
    );
    assert_eq!(
        s.devices.get(ids[1]).await?.map(|d| d.device_no),
        Some("D-2".into())
    );

    let flags = s
        .devices
        .enable_polling_of(&[on.id, ids[0], domain::DeviceId(77_777)])
        .await?;
    assert_eq!(flags.len(), 2);
    assert_eq!(flags.get(&on.id), Some(&true));
    assert_eq!(flags.get(&ids[0]), Some(&false));
    assert!(
        !s.devices
            .set_enable_polling(on.id, false)
            .await?
            .enable_polling
    );

    let card = s
        .cards
        .insert(&bound_card("8986000000000000001", on.id))
        .await?;
    assert!(s.devices.soft_delete(on.id).await?);
    assert!(!s.devices.soft_delete(on.id).await?);
    assert_eq!(s.devices.get(on.id).await?, None);
    assert_eq!(
        s.cards.get(card.id).await?.and_then(|c| c.facts.device_id),
        None,
        "unbound"
    );
    assert!(s.devices.enable_polling_of(&[on.id]).await?.is_empty());
    assert!(matches!(
        s.devices.set_enable_polling(on.id, true).await,
        Err(StoreError::NotFound { .. })
    ));
    Ok(())
}

/// `facts_of`: each live card once, by id, with its device's switch (`None` standalone or for a
/// deleted device) and, when asked, exactly the packages covering it: the device's for a bound
/// card (not its own), the card's own for a standalone one.
#[tokio::test]
async fn facts_of_reads_cards_switches_and_covering_packages_in_one_go() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let device = s
        .devices
        .insert(&NewDevice {
            device_no: "D-F".into(),
            enable_polling: false,
        })
        .await?;
    let gone = s
        .devices
        .insert(&NewDevice {
            device_no: "D-G".into(),
            enable_polling: false,
        })
        .await?;
    let bound = s
        .cards
        .insert(&bound_card("8986000000000000101", device.id))
        .await?;
    let orphan = s
        .cards
        .insert(&bound_card("8986000000000000102", gone.id))
        .await?;
    let alone = s.cards.insert(&new_card("8986000000000000103")).await?;
    let deleted = s.cards.insert(&new_card("8986000000000000104")).await?;
    assert!(s.devices.soft_delete(gone.id).await?);
    assert!(s.cards.soft_delete(deleted.id).await?);
    let (t0, t1) = (now() - Duration::days(1), now() + Duration::days(30));
    let usage = |owner| active_usage(owner, Some(dec!(100)), dec!(1), dec!(0), t0, t1);
    let on_device = s
        .packages
        .create_usage(&usage(PackageOwner::Device(device.id)))
        .await?;
    let second = s
        .packages
        .create_usage(&usage(PackageOwner::Device(device.id)))
        .await?;
    let own_of_bound = s
        .packages
        .create_usage(&usage(PackageOwner::Card(bound.id)))
        .await?;
    let on_alone = s
        .packages
        .create_usage(&usage(PackageOwner::Card(alone.id)))
        .await?;

    let ids = [
        alone.id,
        deleted.id,
        bound.id,
        CardId(999_999),
        orphan.id,
        bound.id,
    ];
    let facts = s.cards.facts_of(&ids, true).await?;
    let by_id: Vec<_> = facts
        .iter()
        .map(|f| {
            (
                f.card.id,
                f.device_polling,
                f.packages.iter().map(|p| p.id).collect::<Vec<_>>(),
            )
        })
        .collect();
    assert_eq!(
        by_id,
        vec![
            (bound.id, Some(false), vec![on_device.id, second.id]),
            (orphan.id, None, vec![]),
            (alone.id, None, vec![on_alone.id]),
        ]
    );
    assert!(!by_id.iter().any(|(_, _, p)| p.contains(&own_of_bound.id)));
    assert_eq!(
        facts[0].card,
        s.cards.get(bound.id).await?.expect("bound card")
    );
    assert_eq!(facts[0].packages[0], on_device);
    assert!(!facts[0].polling_enabled(), "its device's switch is off");
    assert!(
        facts[1].polling_enabled(),
        "a deleted device does not hold the card back"
    );

    let without = s.cards.facts_of(&ids, false).await?;
    assert_eq!(without.len(), 3);
    assert!(without.iter().all(|f| f.packages.is_empty()));
    assert!(s.cards.facts_of(&[], true).await?.is_empty());
    Ok(())
}
