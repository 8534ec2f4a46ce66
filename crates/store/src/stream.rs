//! [`PgCarrierStreamStore`]: the write of a carrier's push stream (`tb_carrier_event`) and the
//! usage write of the cards its records name, in one transaction per post.
//!
//! The order of locks is the usage poll's (`batch/usage.rs`): the card rows (`FOR UPDATE`, in
//! id order), then the owners' valid packages (in id order); `tb_carrier_event` is written last.
//! Two posts carrying one record serialise on its card's row, so the second finds the record
//! applied and counts nothing. Unlike a poll the write leaves `usage_recorded_at` alone: that
//! stamp orders polled totals against each other (the baseline), which a pushed record does
//! not move, so a poll in flight across a push still applies its total.

use crate::batch::group_commit;
use crate::batch::usage::{CounterColumns, INSERT_USAGE_RECORDS, lock_valid_packages, valid_at};
use crate::convert;
use crate::entity::iot_card;
use crate::error::db_err;
use crate::sql::{col, stmt};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::store::{CarrierStreamStore, StoreResult};
use domain::{
    Card, CardId, CarrierId, DeductionStep, Megabytes, PackageOwner, PackageUsageId, StreamOutcome,
    StreamWrite, StreamedCard, StreamedUsage, apply_streamed, plan_deduction,
};
use rust_decimal::Decimal;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, FromQueryResult, TransactionTrait,
};
use std::collections::{BTreeMap, HashMap, HashSet};

const LOCK_CARDS: &str = "SELECT * FROM tb_iot_card \
     WHERE carrier_id = $1 AND iccid = ANY($2) AND deleted_at IS NULL ORDER BY id FOR UPDATE";

const APPLIED_BEFORE: &str =
    "SELECT record_id FROM tb_carrier_event WHERE carrier_id = $1 AND record_id = ANY($2)";

/// The counters of the changed cards; `usage_recorded_at` is the polls' (module doc).
const SET_COUNTERS: &str = r#"
UPDATE tb_iot_card c
SET current_month_start_date = v.month_start, current_month_usage_mb = v.month_usage,
    last_gateway_total_mb = v.baseline, last_month_total_mb = v.last_month,
    streamed_ahead_mb = v.ahead, data_usage_mb = v.lifetime, updated_at = $8
FROM UNNEST($1::bigint[], $2::date[], $3::numeric[], $4::numeric[], $5::numeric[],
            $6::numeric[], $7::numeric[])
     AS v(id, month_start, month_usage, baseline, last_month, ahead, lifetime)
WHERE c.id = v.id
"#;

const INSERT_EVENTS: &str = r#"
INSERT INTO tb_carrier_event
    (carrier_id, record_id, iot_card_id, usage_mb, counted_mb, ended_at, received_at)
SELECT $1, r.record_id, r.card, r.usage_mb, r.counted_mb, r.ended_at, $7
FROM UNNEST($2::varchar[], $3::bigint[], $4::numeric[], $5::numeric[], $6::timestamptz[])
     AS r(record_id, card, usage_mb, counted_mb, ended_at)
"#;

/// The PostgreSQL [`CarrierStreamStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgCarrierStreamStore {
    db: DatabaseConnection,
}

impl PgCarrierStreamStore {
    pub fn new(db: DatabaseConnection) -> Self {
        Self { db }
    }
}

#[async_trait]
impl CarrierStreamStore for PgCarrierStreamStore {
    async fn apply_streamed_usage(
        &self,
        carrier: CarrierId,
        records: &[StreamedUsage],
        now: DateTime<Utc>,
    ) -> StoreResult<StreamWrite> {
        if records.is_empty() {
            return Ok(StreamWrite::default());
        }
        group_commit::retried("stream", records.len(), || {
            write(&self.db, carrier, records, now)
        })
        .await
    }
}

/// A card of the post, as the earlier records of the post left it.
struct Locked {
    card: Card,
    counted: Megabytes,
    steps: Vec<DeductionStep>,
    dirty: bool,
}

/// The rows `tb_carrier_event` and `tb_data_usage_record` get, as columns.
#[derive(Default)]
struct Rows {
    record_ids: Vec<String>,
    cards: Vec<i64>,
    usage: Vec<Decimal>,
    counted: Vec<Decimal>,
    ended: Vec<DateTime<Utc>>,
    usage_cards: Vec<i64>,
    usage_deltas: Vec<Decimal>,
    usage_totals: Vec<Decimal>,
    usage_at: Vec<DateTime<Utc>>,
}

async fn write(
    db: &DatabaseConnection,
    carrier: CarrierId,
    records: &[StreamedUsage],
    now: DateTime<Utc>,
) -> StoreResult<StreamWrite> {
    let txn = db.begin().await.map_err(db_err)?;
    let mut cards = lock_cards(&txn, carrier, records).await?;
    let ids: Vec<String> = records.iter().map(|r| r.record_id.clone()).collect();
    let rows = txn
        .query_all_raw(stmt(APPLIED_BEFORE, [carrier.get().into(), ids.into()]))
        .await
        .map_err(db_err)?;
    let mut seen: HashSet<String> = HashSet::with_capacity(records.len());
    for row in &rows {
        seen.insert(col::<String>(row, "record_id")?);
    }
    let mut packages = lock_valid_packages(&txn, cards.values().map(|l| &l.card), now, now).await?;

    // Applied in the order the sessions ended: a post spanning a month's end opens the new
    // month after counting the old one's records.
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by(|a, b| {
        let (a, b) = (&records[*a], &records[*b]);
        (a.ended_at, &a.record_id).cmp(&(b.ended_at, &b.record_id))
    });
    let by_iccid: HashMap<String, CardId> = cards
        .values()
        .map(|l| (l.card.facts.iccid.clone(), l.card.id))
        .collect();
    let mut outcomes = vec![StreamOutcome::Duplicate; records.len()];
    let mut out = Rows::default();
    let mut added: BTreeMap<PackageUsageId, Decimal> = BTreeMap::new();
    for i in order {
        let record = &records[i];
        let Some(card_id) = by_iccid.get(&record.iccid) else {
            outcomes[i] = StreamOutcome::UnknownCard;
            continue;
        };
        if !seen.insert(record.record_id.clone()) {
            continue; // Duplicate: applied before, or earlier in this post.
        }
        let Some(locked) = cards.get_mut(card_id) else {
            outcomes[i] = StreamOutcome::UnknownCard;
            continue;
        };
        let counted = match apply_streamed(&locked.card.usage, record.month, record.megabytes) {
            None => {
                outcomes[i] = StreamOutcome::ClosedMonth;
                Decimal::ZERO
            }
            Some(update) => {
                outcomes[i] = StreamOutcome::Applied;
                locked.card.usage = update.counters.clone();
                locked.card.data_usage_mb += update.delta_mb;
                locked.card.updated_at = now;
                locked.counted += update.delta_mb;
                locked.dirty = true;
                if update.delta_mb > Decimal::ZERO || update.rolled_over {
                    out.usage_cards.push(card_id.get());
                    out.usage_deltas.push(update.delta_mb);
                    out.usage_totals
                        .push(update.counters.current_month_usage_mb);
                    out.usage_at.push(now);
                }
                let owner = PackageOwner::covering(locked.card.id, locked.card.facts.device_id);
                let owned = packages.entry(owner).or_default();
                let steps = plan_deduction(owned, update.delta_mb, now);
                for step in &steps {
                    if let Some(p) = owned.iter_mut().find(|p| p.id == step.id) {
                        p.spec.used_mb += step.add_virtual_mb;
                    }
                    *added.entry(step.id).or_default() += step.add_virtual_mb;
                }
                locked.steps.extend(steps);
                update.delta_mb
            }
        };
        out.record_ids.push(record.record_id.clone());
        out.cards.push(card_id.get());
        out.usage.push(record.megabytes);
        out.counted.push(counted);
        out.ended.push(record.ended_at);
    }

    set_counters(&txn, cards.values().filter(|l| l.dirty), now).await?;
    if !out.usage_cards.is_empty() {
        txn.execute_raw(stmt(
            INSERT_USAGE_RECORDS,
            [
                out.usage_cards.into(),
                out.usage_deltas.into(),
                out.usage_totals.into(),
                out.usage_at.into(),
            ],
        ))
        .await
        .map_err(db_err)?;
    }
    if !added.is_empty() {
        let (ids, adds): (Vec<i64>, Vec<Decimal>) =
            added.into_iter().map(|(id, add)| (id.get(), add)).unzip();
        txn.execute_raw(stmt(
            crate::package_sql::ADD_USED,
            [ids.into(), adds.into(), now.into()],
        ))
        .await
        .map_err(db_err)?;
    }
    if !out.record_ids.is_empty() {
        txn.execute_raw(stmt(
            INSERT_EVENTS,
            [
                carrier.get().into(),
                out.record_ids.into(),
                out.cards.into(),
                out.usage.into(),
                out.counted.into(),
                out.ended.into(),
                now.into(),
            ],
        ))
        .await
        .map_err(db_err)?;
    }
    txn.commit().await.map_err(db_err)?;

    let mut changed: Vec<StreamedCard> = cards
        .into_values()
        .filter(|l| l.dirty)
        .map(|l| {
            let owner = PackageOwner::covering(l.card.id, l.card.facts.device_id);
            let valid_packages = packages
                .get(&owner)
                .map(|owned| valid_at(owned, now))
                .unwrap_or_default();
            StreamedCard {
                card: l.card,
                counted_mb: l.counted,
                steps: l.steps,
                valid_packages,
            }
        })
        .collect();
    changed.sort_by_key(|c| c.card.id);
    Ok(StreamWrite {
        outcomes,
        cards: changed,
    })
}

/// The live cards of `carrier` the records name, locked in id order.
async fn lock_cards(
    txn: &DatabaseTransaction,
    carrier: CarrierId,
    records: &[StreamedUsage],
) -> StoreResult<HashMap<CardId, Locked>> {
    let mut iccids: Vec<String> = records.iter().map(|r| r.iccid.clone()).collect();
    iccids.sort_unstable();
    iccids.dedup();
    let rows = txn
        .query_all_raw(stmt(LOCK_CARDS, [carrier.get().into(), iccids.into()]))
        .await
        .map_err(db_err)?;
    let mut cards = HashMap::with_capacity(rows.len());
    for row in &rows {
        let card = convert::card(iot_card::Model::from_query_result(row, "").map_err(db_err)?)?;
        cards.insert(
            card.id,
            Locked {
                card,
                counted: Decimal::ZERO,
                steps: Vec::new(),
                dirty: false,
            },
        );
    }
    Ok(cards)
}

async fn set_counters<'a, C: ConnectionTrait>(
    txn: &C,
    written: impl Iterator<Item = &'a Locked>,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let mut cols = CounterColumns::default();
    for locked in written {
        cols.push(&locked.card)?;
    }
    if cols.ids.is_empty() {
        return Ok(());
    }
    let CounterColumns {
        ids,
        starts,
        month,
        baseline,
        last_month,
        ahead,
        lifetime,
    } = cols;
    txn.execute_raw(stmt(
        SET_COUNTERS,
        [
            ids.into(),
            starts.into(),
            month.into(),
            baseline.into(),
            last_month.into(),
            ahead.into(),
            lifetime.into(),
            now.into(),
        ],
    ))
    .await
    .map_err(db_err)?;
    Ok(())
}
