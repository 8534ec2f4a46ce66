//! Group commit of usage polls: the writes of many cards' `record_usage` calls in one
//! transaction of five set-based statements.
//!
//! Every rule of the single-card write holds per card inside the batch (see `usage.rs`): the
//! card rows are locked (`FOR UPDATE`, in id order, so two batches of two nodes never deadlock
//! on each other), each report is applied to the counters the locked row holds *as the earlier
//! reports of the same batch left them*, a report asked for before the counters' last write is
//! stale and left to the next poll, and the deduction runs on the owner's valid packages, locked,
//! as the earlier deductions of the batch left them (two cards of one device share its
//! packages). A batch that fails writes nothing: every caller gets the error and reschedules its
//! card at the retry interval; a deadlock or a serialization failure is retried once first.
//!
//! Costs per batch, whatever its size: one `BEGIN`, five statements, one `COMMIT`.

use super::group_commit;
use crate::convert;
use crate::entity::{iot_card, package_usage};
use crate::error::db_err;
use crate::sql::{col, models, stmt};
use batch::Batcher;
use chrono::{DateTime, NaiveDate, Utc};
use domain::store::{StoreResult, UsageRecorded};
use domain::{
    Card, CardId, MonthUsage, PackageOwner, PackageUsage, PackageUsageId, StoreError, UsageUpdate,
    apply_month_total, plan_deduction,
};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, FromQueryResult, TransactionTrait};
use std::collections::{BTreeMap, HashMap};

/// The most polls one transaction carries (bound: ≤ 1,000 rows).
pub(crate) const MAX_BATCH: usize = 1_000;

const LOCK_CARDS: &str = "SELECT * FROM tb_iot_card WHERE id = ANY($1) AND deleted_at IS NULL \
                          ORDER BY id FOR UPDATE";

/// The valid packages of every owner of the batch: valid at some `now` of the batch (`$3` the
/// latest, `$4` the earliest); each poll then keeps those valid at its own `now`.
const LOCK_VALID_PACKAGES: &str = "SELECT * FROM tb_package_usage \
     WHERE (iot_card_id = ANY($1) OR device_id = ANY($2)) AND status = 'active' \
       AND (activated_at IS NULL OR activated_at <= $3) \
       AND (expires_at IS NULL OR expires_at > $4) \
     ORDER BY id FOR UPDATE";

/// The final counters of each card of the batch (one row per card).
const SET_USAGE: &str = r#"
UPDATE tb_iot_card c
SET current_month_start_date = v.month_start, current_month_usage_mb = v.month_usage,
    last_gateway_total_mb = v.baseline, last_month_total_mb = v.last_month,
    streamed_ahead_mb = v.ahead, data_usage_mb = v.lifetime, updated_at = v.at,
    usage_recorded_at = v.at
FROM UNNEST($1::bigint[], $2::date[], $3::numeric[], $4::numeric[], $5::numeric[],
            $6::numeric[], $7::timestamptz[], $8::numeric[])
     AS v(id, month_start, month_usage, baseline, last_month, lifetime, at, ahead)
WHERE c.id = v.id
"#;

pub(crate) const INSERT_USAGE_RECORDS: &str = r#"
INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at)
SELECT * FROM UNNEST($1::bigint[], $2::numeric[], $3::numeric[], $4::timestamptz[])
"#;

/// One poll's report, as `CardStore::record_usage` takes it.
#[derive(Debug, Clone)]
pub(crate) struct UsagePoll {
    pub(crate) id: CardId,
    pub(crate) reported: MonthUsage,
    pub(crate) asked_at: DateTime<Utc>,
    pub(crate) now: DateTime<Utc>,
}

pub(crate) type UsageAnswer = StoreResult<Option<UsageRecorded>>;

/// The group-commit writer of one pool.
pub(crate) fn writer(db: DatabaseConnection) -> Batcher<UsagePoll, UsageAnswer> {
    Batcher::new("usage", MAX_BATCH, move |polls: Vec<UsagePoll>| {
        let db = db.clone();
        async move { flush(&db, &polls).await }
    })
}

async fn flush(db: &DatabaseConnection, polls: &[UsagePoll]) -> Vec<UsageAnswer> {
    let result = group_commit::retried("usage", polls.len(), || write(db, polls)).await;
    metrics::histogram!("cmp_usage_batch_size").record(polls.len() as f64);
    result.unwrap_or_else(|error| {
        metrics::counter!("cmp_usage_batch_failures_total").increment(1);
        group_commit::each_failed(polls.len(), error)
    })
}

/// A card of the batch as the earlier polls of the batch left it.
struct Locked {
    card: Card,
    /// When its counters were last written (`usage_recorded_at`).
    written: Option<DateTime<Utc>>,
    /// Written by this batch: its final counters go to `SET_USAGE`.
    dirty: bool,
}

async fn write(db: &DatabaseConnection, polls: &[UsagePoll]) -> StoreResult<Vec<UsageAnswer>> {
    let mut ids: Vec<i64> = polls.iter().map(|p| p.id.get()).collect();
    ids.sort_unstable();
    ids.dedup();
    let txn = db.begin().await.map_err(db_err)?;
    let rows = txn
        .query_all_raw(stmt(LOCK_CARDS, [ids.into()]))
        .await
        .map_err(db_err)?;
    let mut cards: HashMap<CardId, Locked> = HashMap::with_capacity(rows.len());
    for row in &rows {
        let written: Option<DateTime<Utc>> = col(row, "usage_recorded_at")?;
        let card = convert::card(iot_card::Model::from_query_result(row, "").map_err(db_err)?)?;
        cards.insert(
            card.id,
            Locked {
                card,
                written,
                dirty: false,
            },
        );
    }
    let mut packages = lock_packages(&txn, &cards, polls).await?;

    let mut answers = Vec::with_capacity(polls.len());
    let mut records = Records::default();
    let mut added: BTreeMap<PackageUsageId, Decimal> = BTreeMap::new();
    for poll in polls {
        let Some(locked) = cards.get_mut(&poll.id) else {
            answers.push(Ok(None));
            continue;
        };
        let owner = PackageOwner::covering(locked.card.id, locked.card.facts.device_id);
        let owned = packages.entry(owner).or_default();
        let stale = locked.written.is_some_and(|last| last >= poll.asked_at);
        let update = apply_month_total(&locked.card.usage, &poll.reported);
        if stale || !update.changes(&locked.card.usage) {
            answers.push(Ok(Some(UsageRecorded {
                update: None,
                card: locked.card.clone(),
                stale,
                steps: Vec::new(),
                valid_packages: Some(valid_at(owned, poll.now)),
            })));
            continue;
        }
        locked.card.usage = update.counters.clone();
        locked.card.data_usage_mb += update.delta_mb;
        locked.card.updated_at = poll.now;
        locked.written = Some(poll.now);
        locked.dirty = true;
        if counts(&update) {
            records.push(poll, &update);
        }
        let steps = plan_deduction(owned, update.delta_mb, poll.now);
        for step in &steps {
            if let Some(p) = owned.iter_mut().find(|p| p.id == step.id) {
                p.spec.used_mb += step.add_virtual_mb;
            }
            *added.entry(step.id).or_default() += step.add_virtual_mb;
        }
        answers.push(Ok(Some(UsageRecorded {
            update: Some(update),
            card: locked.card.clone(),
            stale: false,
            steps,
            valid_packages: Some(valid_at(owned, poll.now)),
        })));
    }

    set_counters(&txn, cards.values().filter(|c| c.dirty)).await?;
    records.insert(&txn).await?;
    if !added.is_empty() {
        let (ids, adds): (Vec<i64>, Vec<Decimal>) =
            added.into_iter().map(|(id, add)| (id.get(), add)).unzip();
        let now = polls.iter().map(|p| p.now).max().unwrap_or_else(Utc::now);
        txn.execute_raw(stmt(
            crate::package_sql::ADD_USED,
            [ids.into(), adds.into(), now.into()],
        ))
        .await
        .map_err(db_err)?;
    }
    txn.commit().await.map_err(db_err)?;
    Ok(answers)
}

/// The valid packages of every owner of the batch's live cards, locked, grouped by owner.
async fn lock_packages<C: ConnectionTrait>(
    txn: &C,
    cards: &HashMap<CardId, Locked>,
    polls: &[UsagePoll],
) -> StoreResult<HashMap<PackageOwner, Vec<PackageUsage>>> {
    let (Some(earliest), Some(latest)) = (
        polls.iter().map(|p| p.now).min(),
        polls.iter().map(|p| p.now).max(),
    ) else {
        return Ok(HashMap::new());
    };
    lock_valid_packages(txn, cards.values().map(|l| &l.card), earliest, latest).await
}

/// The packages of the owners of `cards` valid at some time in `earliest..=latest`, locked
/// (`FOR UPDATE`, in id order), grouped by owner, each owner's in deduction order. The usage
/// writes (polls and push streams) lock the card rows first, then these.
pub(crate) async fn lock_valid_packages<'a, C: ConnectionTrait>(
    txn: &C,
    cards: impl Iterator<Item = &'a Card>,
    earliest: DateTime<Utc>,
    latest: DateTime<Utc>,
) -> StoreResult<HashMap<PackageOwner, Vec<PackageUsage>>> {
    let mut card_owners = Vec::new();
    let mut device_owners = Vec::new();
    for card in cards {
        match PackageOwner::covering(card.id, card.facts.device_id) {
            PackageOwner::Card(id) => card_owners.push(id.get()),
            PackageOwner::Device(id) => device_owners.push(id.get()),
        }
    }
    device_owners.sort_unstable();
    device_owners.dedup();
    if card_owners.is_empty() && device_owners.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = models::<package_usage::Entity, _>(
        txn,
        stmt(
            LOCK_VALID_PACKAGES,
            [
                card_owners.into(),
                device_owners.into(),
                latest.into(),
                earliest.into(),
            ],
        ),
    )
    .await?;
    let mut by_owner: HashMap<PackageOwner, Vec<PackageUsage>> = HashMap::new();
    for row in rows {
        let usage = convert::package_usage(row)?;
        by_owner.entry(usage.spec.owner).or_default().push(usage);
    }
    for owned in by_owner.values_mut() {
        owned.sort_by_key(|p| (p.spec.expires_at.is_none(), p.spec.expires_at, p.id));
    }
    Ok(by_owner)
}

/// The owner's packages valid at `now`, in deduction order.
pub(crate) fn valid_at(owned: &[PackageUsage], now: DateTime<Utc>) -> Vec<PackageUsage> {
    owned
        .iter()
        .filter(|p| p.is_valid_at(now))
        .cloned()
        .collect()
}

/// A usage row is written for a positive delta or a rollover (the month's first figure).
pub(crate) fn counts(update: &UsageUpdate) -> bool {
    update.delta_mb > Decimal::ZERO || update.rolled_over
}

async fn set_counters<'a, C: ConnectionTrait>(
    txn: &C,
    written: impl Iterator<Item = &'a Locked>,
) -> StoreResult<()> {
    let mut cols = CounterColumns::default();
    let mut at: Vec<DateTime<Utc>> = Vec::new();
    for locked in written {
        cols.push(&locked.card)?;
        at.push(locked.written.unwrap_or(locked.card.updated_at));
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
        SET_USAGE,
        [
            ids.into(),
            starts.into(),
            month.into(),
            baseline.into(),
            last_month.into(),
            lifetime.into(),
            at.into(),
            ahead.into(),
        ],
    ))
    .await
    .map_err(db_err)?;
    Ok(())
}

/// The month counters of the cards a transaction wrote, as the columns of one `UPDATE
/// tb_iot_card ... FROM unnest(...)`: the usage poll's (`SET_USAGE`) and the push stream's.
#[derive(Default)]
pub(crate) struct CounterColumns {
    pub(crate) ids: Vec<i64>,
    pub(crate) starts: Vec<NaiveDate>,
    pub(crate) month: Vec<Decimal>,
    pub(crate) baseline: Vec<Decimal>,
    pub(crate) last_month: Vec<Decimal>,
    pub(crate) ahead: Vec<Decimal>,
    pub(crate) lifetime: Vec<Decimal>,
}

impl CounterColumns {
    /// Adds `card`'s counters; counters are never written without their month.
    pub(crate) fn push(&mut self, card: &Card) -> StoreResult<()> {
        let c = &card.usage;
        let Some(start) = c.current_month_start_date else {
            return Err(StoreError::Invalid(format!(
                "card {}: counters written without a month",
                card.id
            )));
        };
        self.ids.push(card.id.get());
        self.starts.push(start);
        self.month.push(c.current_month_usage_mb);
        self.baseline.push(c.last_gateway_total_mb);
        self.last_month.push(c.last_month_total_mb);
        self.ahead.push(c.streamed_ahead_mb);
        self.lifetime.push(card.data_usage_mb);
        Ok(())
    }
}

/// The usage rows of the batch, as columns.
#[derive(Default)]
struct Records {
    cards: Vec<i64>,
    deltas: Vec<Decimal>,
    totals: Vec<Decimal>,
    at: Vec<DateTime<Utc>>,
}

impl Records {
    fn push(&mut self, poll: &UsagePoll, update: &UsageUpdate) {
        self.cards.push(poll.id.get());
        self.deltas.push(update.delta_mb);
        self.totals.push(poll.reported.month_total_mb);
        self.at.push(poll.now);
    }

    async fn insert<C: ConnectionTrait>(self, txn: &C) -> StoreResult<()> {
        if self.cards.is_empty() {
            return Ok(());
        }
        txn.execute_raw(stmt(
            INSERT_USAGE_RECORDS,
            [
                self.cards.into(),
                self.deltas.into(),
                self.totals.into(),
                self.at.into(),
            ],
        ))
        .await
        .map_err(db_err)?;
        Ok(())
    }
}
