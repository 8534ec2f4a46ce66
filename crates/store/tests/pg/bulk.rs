use crate::common::{new_card, setup};
use domain::store::CardStore;
use domain::{
    CardCategory, CardFilter, CardId, CarrierId, DeviceId, NewCard, NewDevice, RealNameStatus,
    StoreError,
};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use std::collections::HashSet;
use std::time::Instant;

fn iccid(i: usize) -> String {
    format!("8986{i:015}")
}

/// Streams every eligible card with `page_polling_enabled`; returns ids in order.
async fn stream(cards: &dyn CardStore, page: u32) -> anyhow::Result<Vec<CardId>> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let batch = cards.page_polling_enabled(after, page).await?;
        let Some(last) = batch.last() else { break };
        after = Some(last.id);
        out.extend(batch.iter().map(|c| c.id));
        if batch.len() < page as usize {
            break;
        }
    }
    Ok(out)
}

#[tokio::test]
async fn bulk_insert_of_100k_cards_is_timed_and_keeps_input_order() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    let cards: Vec<NewCard> = (0..100_000)
        .map(|i| NewCard {
            msisdn: (i % 2 == 0).then(|| format!("138{i:08}")),
            carrier_id: CarrierId((i % 5) as i64),
            ..new_card(&iccid(i))
        })
        .collect();
    let started = Instant::now();
    let ids = s.cards.insert_bulk(&cards).await?;
    let took = started.elapsed();
    eprintln!(
        "insert_bulk: 100,000 cards in {:.3} s ({:.0} cards/s)",
        took.as_secs_f64(),
        100_000.0 / took.as_secs_f64()
    );
    assert_eq!(ids.len(), 100_000);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 100_000);
    for i in [0, 1, 19_999, 20_000, 54_321, 99_999] {
        let card = s
            .cards
            .get(ids[i])
            .await?
            .ok_or_else(|| anyhow::anyhow!("card {i} missing"))?;
        assert_eq!(
            card.facts.iccid, cards[i].iccid,
            "id {i} belongs to input {i}"
        );
        assert_eq!(card.facts.msisdn, cards[i].msisdn);
        assert_eq!(card.facts.carrier_id, cards[i].carrier_id);
    }
    assert_eq!(s.cards.count().await?, 100_000);

    // All or nothing: a duplicate in a later chunk refuses the whole call.
    let mut dup: Vec<NewCard> = (0..30_000)
        .map(|i| new_card(&format!("7{i:018}")))
        .collect();
    dup.push(new_card(&iccid(5)));
    assert!(
        matches!(s.cards.insert_bulk(&dup).await, Err(StoreError::Conflict { field, .. }) if field == "iccid")
    );
    assert_eq!(s.cards.count().await?, 100_000);
    Ok(())
}

#[tokio::test]
async fn keyset_stream_over_250k_cards_returns_each_eligible_card_once() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    // 1,000 devices; every fourth has polling off; device 1 has polling off and is deleted
    // without unbinding its cards (as if by hand): its cards count as standalone.
    let devices: Vec<NewDevice> = (0..1_000)
        .map(|i| NewDevice {
            device_no: format!("D-{i}"),
            enable_polling: i % 4 != 0,
        })
        .collect();
    let device_ids = s.devices.insert_bulk(&devices).await?;
    let deleted_device = device_ids[0];
    db.conn
        .execute_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "UPDATE tb_device SET deleted_at = now() WHERE id = $1",
            [deleted_device.get().into()],
        ))
        .await?;
    let device_on = |d: DeviceId| {
        d == deleted_device
            || devices[device_ids.iter().position(|x| *x == d).unwrap_or(0)].enable_polling
    };

    let n = 250_000;
    let cards: Vec<NewCard> = (0..n)
        .map(|i| NewCard {
            enable_polling: i % 7 != 0,
            device_id: (i % 3 == 0).then(|| device_ids[i % 1_000]),
            card_category: if i % 2 == 0 {
                CardCategory::Industry
            } else {
                CardCategory::Normal
            },
            real_name_status: if i % 5 == 0 {
                RealNameStatus::Verified
            } else {
                RealNameStatus::NotVerified
            },
            ..new_card(&iccid(i))
        })
        .collect();
    let started = Instant::now();
    let ids = s.cards.insert_bulk(&cards).await?;
    eprintln!(
        "insert_bulk: {n} cards in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    // A few deleted cards, otherwise eligible.
    let deleted: HashSet<CardId> = ids.iter().copied().skip(1).step_by(10_007).collect();
    for id in &deleted {
        assert!(s.cards.soft_delete(*id).await?);
    }
    db.conn
        .execute_unprepared("VACUUM ANALYZE tb_iot_card")
        .await?;
    db.conn.execute_unprepared("ANALYZE tb_device").await?;

    let expected: Vec<CardId> = cards
        .iter()
        .zip(&ids)
        .filter(|(c, id)| {
            c.enable_polling && !deleted.contains(id) && c.device_id.is_none_or(device_on)
        })
        .map(|(_, id)| *id)
        .collect();
    assert!(expected.len() > 150_000 && expected.len() < n);

    let started = Instant::now();
    let streamed = stream(s.cards.as_ref(), 100_000).await?;
    let took = started.elapsed();
    eprintln!(
        "page_polling_enabled: {} cards in pages of 100,000 in {:.3} s ({:.0} rows/s)",
        streamed.len(),
        took.as_secs_f64(),
        streamed.len() as f64 / took.as_secs_f64()
    );
    assert!(
        streamed.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing: each card once"
    );
    assert_eq!(streamed, expected);
    assert_eq!(
        s.cards.count_polling_enabled().await?,
        expected.len() as u64
    );

    let past_the_end = s
        .cards
        .page_polling_enabled(expected.last().copied(), 10)
        .await?;
    assert!(past_the_end.is_empty());

    // Small pages see the same stream, and the fields are the card's.
    assert_eq!(stream(s.cards.as_ref(), 9_999).await?, expected);
    let first = s.cards.page_polling_enabled(None, 3).await?;
    let card = s
        .cards
        .get(first[0].id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("card"))?;
    assert_eq!(first[0], card.match_fields());

    // list_ids pages by id too.
    let filter = CardFilter {
        card_category: Some(CardCategory::Industry),
        ..CardFilter::default()
    };
    let page = s.cards.list_ids(&filter, Some(ids[100]), 1_000).await?;
    assert_eq!(page.len(), 1_000);
    assert!(page.iter().all(|id| *id > ids[100]));
    Ok(())
}
