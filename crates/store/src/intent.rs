//! The durable intent of stop/resume (`CardStore::append_state_if`, `close_intent`,
//! `interrupt_stale_intents`): a stop or start is a `pending` row of `tb_card_state_log`
//! before the carrier is asked, and the card follows only the carrier's yes.
//!
//! Locks are always taken card row first, then state-log rows, so the three never deadlock
//! with each other.

use crate::card_sql::SET_NETWORK_STATE;
use crate::convert;
use crate::entity::iot_card;
use crate::error::db_err;
use crate::sql::{col, stmt};
use domain::store::{IntentClose, StateWrite, StoreResult};
use domain::{CardId, GatewayOutcome, NewCardStateLog, StopReason, StoreError};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, FromQueryResult, TransactionTrait,
};
use std::time::Duration;

const LOCK_CARD: &str = r#"
SELECT network_status, stop_reason FROM tb_iot_card
WHERE id = $1 AND deleted_at IS NULL
FOR UPDATE
"#;

/// Run after [`LOCK_CARD`] in its own statement: under READ COMMITTED it takes a fresh
/// snapshot, so it sees an intent committed by whoever held the row lock before.
const PENDING_OF_CARD: &str = r#"
SELECT count(*) AS n FROM tb_card_state_log
WHERE iot_card_id = $1 AND gateway_outcome = 'pending'
"#;

const INSERT_ROW: &str = r#"
INSERT INTO tb_card_state_log (iot_card_id, from_status, to_status, stop_reason, trigger,
                               gateway_outcome, trace_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING id
"#;

const CARD_OF_ROW: &str = "SELECT iot_card_id FROM tb_card_state_log WHERE id = $1";

const LOCK_CARD_ANY: &str = "SELECT id FROM tb_iot_card WHERE id = $1 FOR UPDATE";

const SET_OUTCOME: &str = r#"
UPDATE tb_card_state_log SET gateway_outcome = $2,
    trigger = CASE WHEN $4 = '' THEN trigger ELSE left(trigger || ':' || $4, 64) END
WHERE id = $1 AND gateway_outcome = ANY($3)
RETURNING iot_card_id, to_status, stop_reason
"#;

/// The card follows an `ok` row unless a later word of the carrier (a later `ok` row) or a later
/// call in flight (`pending`) was written meanwhile. A later `not_called` row does not count:
/// it was decided on a state the carrier has just changed, and the database must follow the
/// carrier.
const FOLLOW_ROW: &str = r#"
UPDATE tb_iot_card SET network_status = $2, stop_reason = $3, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL
  AND NOT EXISTS (
        SELECT 1 FROM tb_card_state_log l
        WHERE l.iot_card_id = $1 AND l.id > $4
          AND l.gateway_outcome IN ('ok', 'pending'))
RETURNING *
"#;

const INTERRUPT_STALE: &str = r#"
UPDATE tb_card_state_log SET gateway_outcome = 'interrupted'
WHERE iot_card_id = $1 AND gateway_outcome = 'pending'
  AND created_at < now() - make_interval(secs => $2)
"#;

pub(crate) async fn append_state_if(
    db: &DatabaseConnection,
    entry: &NewCardStateLog,
    from_reason: Option<StopReason>,
) -> StoreResult<StateWrite> {
    let id = entry.card_id.get();
    let txn = db.begin().await.map_err(db_err)?;
    let Some(row) = txn
        .query_one_raw(stmt(LOCK_CARD, [id.into()]))
        .await
        .map_err(db_err)?
    else {
        return Ok(StateWrite::Gone);
    };
    let status: i16 = col(&row, "network_status")?;
    let reason: String = col(&row, "stop_reason")?;
    if status != i16::from(entry.from_status) || reason != StopReason::to_column(from_reason) {
        return Ok(StateWrite::Changed);
    }
    let pending: i64 = match txn
        .query_one_raw(stmt(PENDING_OF_CARD, [id.into()]))
        .await
        .map_err(db_err)?
    {
        Some(row) => col(&row, "n")?,
        None => 0,
    };
    if pending > 0 {
        return Ok(StateWrite::InFlight);
    }
    let written = insert(&txn, entry).await;
    let row_id = match written {
        Ok(row_id) => row_id,
        // The partial unique index: an intent of the card got in after all.
        Err(StoreError::Conflict { .. }) => return Ok(StateWrite::InFlight),
        Err(e) => return Err(e),
    };
    if entry.gateway_outcome != GatewayOutcome::Pending {
        txn.execute_raw(stmt(
            SET_NETWORK_STATE,
            [
                id.into(),
                i16::from(entry.to_status).into(),
                StopReason::to_column(entry.stop_reason).into(),
            ],
        ))
        .await
        .map_err(db_err)?;
    }
    txn.commit().await.map_err(db_err)?;
    Ok(StateWrite::Written(row_id))
}

async fn insert(txn: &DatabaseTransaction, entry: &NewCardStateLog) -> StoreResult<i64> {
    let row = txn
        .query_one_raw(stmt(
            INSERT_ROW,
            [
                entry.card_id.get().into(),
                i16::from(entry.from_status).into(),
                i16::from(entry.to_status).into(),
                StopReason::to_column(entry.stop_reason).into(),
                entry.trigger.clone().into(),
                entry.gateway_outcome.as_str().into(),
                entry.trace_id.clone().into(),
            ],
        ))
        .await
        .map_err(db_err)?
        .ok_or_else(|| StoreError::Database("INSERT … RETURNING gave no row".into()))?;
    col(&row, "id")
}

pub(crate) async fn close_intent(
    db: &DatabaseConnection,
    row: i64,
    outcome: GatewayOutcome,
    note: &str,
) -> StoreResult<IntentClose> {
    let from: Vec<String> = match outcome {
        GatewayOutcome::Ok => vec!["pending".to_owned(), "interrupted".to_owned()],
        GatewayOutcome::Failed | GatewayOutcome::Interrupted => vec!["pending".to_owned()],
        GatewayOutcome::Pending | GatewayOutcome::NotCalled => {
            return Err(StoreError::Invalid(format!(
                "an intent cannot be closed as `{outcome}`"
            )));
        }
    };
    let txn = db.begin().await.map_err(db_err)?;
    let Some(card) = txn
        .query_one_raw(stmt(CARD_OF_ROW, [row.into()]))
        .await
        .map_err(db_err)?
    else {
        return Ok(IntentClose::Unchanged);
    };
    let card: i64 = col(&card, "iot_card_id")?;
    txn.query_one_raw(stmt(LOCK_CARD_ANY, [card.into()]))
        .await
        .map_err(db_err)?;
    let Some(set) = txn
        .query_one_raw(stmt(
            SET_OUTCOME,
            [
                row.into(),
                outcome.as_str().into(),
                from.into(),
                note.to_owned().into(),
            ],
        ))
        .await
        .map_err(db_err)?
    else {
        return Ok(IntentClose::Unchanged);
    };
    let mut closed = IntentClose::Closed;
    if outcome == GatewayOutcome::Ok {
        let to: i16 = col(&set, "to_status")?;
        let reason: String = col(&set, "stop_reason")?;
        let followed = txn
            .query_one_raw(stmt(
                FOLLOW_ROW,
                [card.into(), to.into(), reason.into(), row.into()],
            ))
            .await
            .map_err(db_err)?;
        if let Some(written) = followed {
            let model = iot_card::Model::from_query_result(&written, "").map_err(db_err)?;
            closed = IntentClose::Followed(convert::card(model)?);
        }
    }
    txn.commit().await.map_err(db_err)?;
    Ok(closed)
}

pub(crate) async fn interrupt_stale_intents(
    db: &DatabaseConnection,
    id: CardId,
    older_than: Duration,
) -> StoreResult<u64> {
    let res = db
        .execute_raw(stmt(
            INTERRUPT_STALE,
            [id.get().into(), older_than.as_secs_f64().into()],
        ))
        .await
        .map_err(db_err)?;
    Ok(res.rows_affected())
}
