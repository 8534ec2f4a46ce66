//! The two writes of a poll that change facts the poll itself read: the usage counters and the
//! real-name status. Both decide on the database row at write time, never on a caller's copy.
//!
//! `record_usage` locks the card row (`SELECT … FOR UPDATE`) and applies the carrier's report to
//! the locked counters, so two polls of one card that overlap — four task types at once, a
//! manual trigger, a slow carrier answering the first poll after the second — are serialised
//! at the row: the second sees the first's baseline and counts only what is new. A snapshot
//! can never move a counter backwards, because no counter is ever written from a snapshot.
//! And a report is applied only if the carrier was asked after the counters were last written
//! (`usage_recorded_at`): of two overlapping polls the second writer has lost the race, and its
//! answer — possibly older than the one written — is left for the next poll instead of passing
//! for a carrier correction.

use crate::convert;
use crate::entity::iot_card;
use crate::error::db_err;
use crate::package::deduct_in;
use crate::sql::{col, models, stmt};
use chrono::{DateTime, Utc};
use domain::store::{RealNameWrite, StoreResult, UsageRecorded};
use domain::{CardId, MonthUsage, PackageOwner, RealNameStatus, UsageUpdate, apply_month_total};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, FromQueryResult, TransactionTrait};

const LOCK_CARD: &str = "SELECT * FROM tb_iot_card WHERE id = $1 AND deleted_at IS NULL FOR UPDATE";

/// Writes the counters computed from the locked row's own values.
const SET_USAGE: &str = r#"
UPDATE tb_iot_card
SET current_month_start_date = $2, current_month_usage_mb = $3, last_gateway_total_mb = $4,
    last_month_total_mb = $5, data_usage_mb = data_usage_mb + $6, updated_at = $7,
    usage_recorded_at = $7
WHERE id = $1
RETURNING *
"#;

const INSERT_USAGE_RECORD: &str = r#"
INSERT INTO tb_data_usage_record (iot_card_id, delta_mb, month_total_mb, recorded_at)
VALUES ($1, $2, $3, $4)
"#;

/// Compare-and-set: only a status that differs is written.
const SET_REAL_NAME: &str = r#"
UPDATE tb_iot_card SET real_name_status = $2, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL AND real_name_status <> $2
RETURNING *
"#;

const GET_LIVE: &str = "SELECT * FROM tb_iot_card WHERE id = $1 AND deleted_at IS NULL";

pub(crate) async fn record_usage(
    db: &DatabaseConnection,
    id: CardId,
    reported: &MonthUsage,
    asked_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> StoreResult<Option<UsageRecorded>> {
    let txn = db.begin().await.map_err(db_err)?;
    let Some(row) = txn
        .query_one_raw(stmt(LOCK_CARD, [id.get().into()]))
        .await
        .map_err(db_err)?
    else {
        return Ok(None);
    };
    let written: Option<DateTime<Utc>> = col(&row, "usage_recorded_at")?;
    let card = convert::card(iot_card::Model::from_query_result(&row, "").map_err(db_err)?)?;
    let stale = written.is_some_and(|last| last >= asked_at);
    let update = apply_month_total(&card.usage, reported);
    if stale || !update.changes(&card.usage) {
        txn.commit().await.map_err(db_err)?;
        return Ok(Some(UsageRecorded {
            update: None,
            card,
            stale,
            steps: Vec::new(),
            valid_packages: None,
        }));
    }
    let c = &update.counters;
    let written = models::<iot_card::Entity, _>(
        &txn,
        stmt(
            SET_USAGE,
            [
                id.get().into(),
                c.current_month_start_date.into(),
                c.current_month_usage_mb.into(),
                c.last_gateway_total_mb.into(),
                c.last_month_total_mb.into(),
                update.delta_mb.into(),
                now.into(),
            ],
        ),
    )
    .await?;
    let after = match written.into_iter().next() {
        Some(row) => convert::card(row)?,
        None => return Ok(None),
    };
    if counts(&update) {
        txn.execute_raw(stmt(
            INSERT_USAGE_RECORD,
            [
                id.get().into(),
                update.delta_mb.into(),
                reported.month_total_mb.into(),
                now.into(),
            ],
        ))
        .await
        .map_err(db_err)?;
    }
    let owner = PackageOwner::covering(after.id, after.device_id);
    let (steps, valid_packages) = deduct_in(&txn, owner, update.delta_mb, now).await?;
    txn.commit().await.map_err(db_err)?;
    Ok(Some(UsageRecorded {
        update: Some(update),
        card: after,
        stale: false,
        steps,
        valid_packages,
    }))
}

/// A usage row is written for a positive delta or a rollover (the month's first figure).
fn counts(update: &UsageUpdate) -> bool {
    update.delta_mb > Decimal::ZERO || update.rolled_over
}

pub(crate) async fn set_real_name(
    db: &DatabaseConnection,
    id: CardId,
    status: RealNameStatus,
) -> StoreResult<Option<RealNameWrite>> {
    let changed = models::<iot_card::Entity, _>(
        db,
        stmt(SET_REAL_NAME, [id.get().into(), i16::from(status).into()]),
    )
    .await?;
    if let Some(row) = changed.into_iter().next() {
        return Ok(Some(RealNameWrite {
            changed: true,
            card: convert::card(row)?,
        }));
    }
    let current = models::<iot_card::Entity, _>(db, stmt(GET_LIVE, [id.get().into()])).await?;
    current
        .into_iter()
        .next()
        .map(|row| {
            Ok(RealNameWrite {
                changed: false,
                card: convert::card(row)?,
            })
        })
        .transpose()
}
