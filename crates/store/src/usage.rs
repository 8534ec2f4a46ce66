//! The two writes of a poll that change facts the poll itself read: the usage counters and the
//! real-name status. Both decide on the database row at write time, never on a caller's copy.
//!
//! `record_usage` (group-committed: `usage_batch.rs`) locks the card row (`SELECT … FOR
//! UPDATE`) and applies the carrier's report to the locked counters, so two polls of one card that overlap — four task types at once, a
//! manual trigger, a slow carrier answering the first poll after the second — are serialised
//! at the row: the second sees the first's baseline and counts only what is new. A snapshot
//! can never move a counter backwards, because no counter is ever written from a snapshot.
//! And a report is applied only if the carrier was asked after the counters were last written
//! (`usage_recorded_at`): of two overlapping polls the second writer has lost the race, and its
//! answer — possibly older than the one written — is left for the next poll instead of passing
//! for a carrier correction.

use crate::convert;
use crate::entity::iot_card;
use crate::sql::{models, stmt};
use domain::store::{RealNameWrite, StoreResult};
use domain::{CardId, RealNameStatus};
use sea_orm::DatabaseConnection;

/// Compare-and-set: only a status that differs is written.
const SET_REAL_NAME: &str = r#"
UPDATE tb_iot_card SET real_name_status = $2, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL AND real_name_status <> $2
RETURNING *
"#;

const GET_LIVE: &str = "SELECT * FROM tb_iot_card WHERE id = $1 AND deleted_at IS NULL";

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
