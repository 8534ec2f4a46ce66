//! Group commit of package polls: the `upsert_carrier_packages` calls of concurrent polls in one
//! transaction of at most two set-based upserts (one for the packages of cards, one for those of
//! devices: each has its own unique index on `(owner, external_id)`).
//!
//! The rule of the single-owner write holds per row: a package is matched by its owner and
//! `external_id`, inserted when new, and rewritten only when a field differs (an unchanged
//! package is not touched, so the common poll writes nothing). Within a batch the last report
//! of an `(owner, external_id)` wins, in the order the polls were submitted, as if each poll
//! had written on its own one after the other (two cards of one device report its packages:
//! `ON CONFLICT DO UPDATE` refuses to touch one row twice in one statement, so each row is sent
//! once). A batch that fails writes nothing: every caller gets the error and reschedules its
//! card at the retry interval; a deadlock is retried once first.
//!
//! Costs per batch, whatever its size: one `BEGIN`, at most two statements, one `COMMIT`.

use super::group_commit;
use crate::bulk::push_opt;
use crate::error::db_err;
use crate::sql::{col, stmt};
use batch::Batcher;
use chrono::{DateTime, Utc};
use domain::store::StoreResult;
use domain::{CarrierPackage, PackageOwner};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, TransactionTrait, Value};
use std::collections::{HashMap, HashSet};

/// The most polls one transaction carries.
const MAX_BATCH: usize = 1_000;

macro_rules! upsert_carrier_many_sql {
    ($owner:literal) => {
        concat!(
            "INSERT INTO tb_package_usage (",
            $owner,
            ", external_id, status, used_mb, data_limit_mb, activated_at, expires_at) \
             SELECT t.owner, t.external_id, t.status, t.used_mb, \
                    CASE WHEN t.has_limit THEN t.limit_mb END, \
                    CASE WHEN t.has_activated THEN t.activated_at END, \
                    CASE WHEN t.has_expires THEN t.expires_at END \
             FROM UNNEST($1::bigint[], $2::varchar[], $3::varchar[], $4::numeric[], $5::numeric[], \
                         $6::bool[], $7::timestamptz[], $8::bool[], $9::timestamptz[], $10::bool[]) \
                  AS t(owner, external_id, status, used_mb, limit_mb, has_limit, activated_at, \
                       has_activated, expires_at, has_expires) \
             ON CONFLICT (",
            $owner,
            ", external_id) WHERE ",
            $owner,
            " IS NOT NULL AND external_id IS NOT NULL \
             DO UPDATE SET status = EXCLUDED.status, used_mb = EXCLUDED.used_mb, \
                 data_limit_mb = EXCLUDED.data_limit_mb, activated_at = EXCLUDED.activated_at, \
                 expires_at = EXCLUDED.expires_at, updated_at = now() \
             WHERE (tb_package_usage.status, tb_package_usage.used_mb, \
                    tb_package_usage.data_limit_mb, tb_package_usage.activated_at, \
                    tb_package_usage.expires_at) \
                   IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.used_mb, EXCLUDED.data_limit_mb, \
                                     EXCLUDED.activated_at, EXCLUDED.expires_at) \
             RETURNING ",
            $owner,
            " AS owner, external_id"
        )
    };
}

const UPSERT_CARD_PACKAGES: &str = upsert_carrier_many_sql!("iot_card_id");
const UPSERT_DEVICE_PACKAGES: &str = upsert_carrier_many_sql!("device_id");

/// One poll's report, as `PackageStore::upsert_carrier_packages` takes it.
#[derive(Debug, Clone)]
pub(crate) struct CarrierReport {
    pub(crate) owner: PackageOwner,
    pub(crate) packages: Vec<CarrierPackage>,
}

/// Rows of the poll's packages the batch inserted or changed.
pub(crate) type ReportAnswer = StoreResult<u64>;

/// The group-commit writer of one pool.
pub(crate) fn writer(db: DatabaseConnection) -> Batcher<CarrierReport, ReportAnswer> {
    Batcher::new(
        "carrier packages",
        MAX_BATCH,
        move |reports: Vec<CarrierReport>| {
            let db = db.clone();
            async move { flush(&db, &reports).await }
        },
    )
}

async fn flush(db: &DatabaseConnection, reports: &[CarrierReport]) -> Vec<ReportAnswer> {
    group_commit::retried("package", reports.len(), || write(db, reports))
        .await
        .unwrap_or_else(|error| group_commit::each_failed(reports.len(), error))
}

/// `(is a device, owner id)`.
type OwnerKey = (bool, i64);

fn key_of(owner: PackageOwner) -> OwnerKey {
    match owner {
        PackageOwner::Card(card) => (false, card.get()),
        PackageOwner::Device(device) => (true, device.get()),
    }
}

/// The rows of one kind of owner, one per `(owner, external_id)`, the last report winning.
#[derive(Default)]
struct Rows<'a> {
    /// Where each `(owner, external_id)` sits in `rows`.
    at: HashMap<(i64, &'a str), usize>,
    rows: Vec<(i64, &'a CarrierPackage)>,
}

impl<'a> Rows<'a> {
    fn push(&mut self, owner: i64, package: &'a CarrierPackage) {
        match self.at.get(&(owner, package.external_id.as_str())) {
            Some(&i) => self.rows[i] = (owner, package),
            None => {
                self.at
                    .insert((owner, package.external_id.as_str()), self.rows.len());
                self.rows.push((owner, package));
            }
        }
    }

    /// Writes the rows; answers the `(owner, external_id)` written.
    async fn upsert(
        &self,
        txn: &DatabaseTransaction,
        sql: &str,
    ) -> StoreResult<HashSet<(i64, String)>> {
        if self.rows.is_empty() {
            return Ok(HashSet::new());
        }
        let (mut owner, mut ext, mut status, mut used) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::<Decimal>::new());
        let (mut limit, mut has_limit) = (Vec::<Decimal>::new(), Vec::new());
        let (mut act, mut has_act, mut exp, mut has_exp) = (
            Vec::<DateTime<Utc>>::new(),
            Vec::new(),
            Vec::<DateTime<Utc>>::new(),
            Vec::new(),
        );
        for (id, p) in &self.rows {
            owner.push(*id);
            ext.push(p.external_id.clone());
            status.push(p.status.as_str().to_owned());
            used.push(p.used_mb);
            push_opt(&mut limit, &mut has_limit, p.limit_mb);
            push_opt(&mut act, &mut has_act, p.activated_at);
            push_opt(&mut exp, &mut has_exp, p.expires_at);
        }
        let values: Vec<Value> = vec![
            owner.into(),
            ext.into(),
            status.into(),
            used.into(),
            limit.into(),
            has_limit.into(),
            act.into(),
            has_act.into(),
            exp.into(),
            has_exp.into(),
        ];
        let written = txn.query_all_raw(stmt(sql, values)).await.map_err(db_err)?;
        written
            .iter()
            .map(|row| {
                Ok((
                    col::<i64>(row, "owner")?,
                    col::<String>(row, "external_id")?,
                ))
            })
            .collect()
    }
}

async fn write(
    db: &DatabaseConnection,
    reports: &[CarrierReport],
) -> StoreResult<Vec<ReportAnswer>> {
    let (mut cards, mut devices) = (Rows::default(), Rows::default());
    for report in reports {
        let (is_device, id) = key_of(report.owner);
        let rows = if is_device { &mut devices } else { &mut cards };
        for package in &report.packages {
            rows.push(id, package);
        }
    }
    let txn = db.begin().await.map_err(db_err)?;
    let written_cards = cards.upsert(&txn, UPSERT_CARD_PACKAGES).await?;
    let written_devices = devices.upsert(&txn, UPSERT_DEVICE_PACKAGES).await?;
    txn.commit().await.map_err(db_err)?;
    Ok(reports
        .iter()
        .map(|report| {
            let (is_device, id) = key_of(report.owner);
            let written = if is_device {
                &written_devices
            } else {
                &written_cards
            };
            let mine: HashSet<&str> = report
                .packages
                .iter()
                .map(|p| p.external_id.as_str())
                .collect();
            Ok(mine
                .into_iter()
                .filter(|ext| written.contains(&(id, (*ext).to_owned())))
                .count() as u64)
        })
        .collect())
}
