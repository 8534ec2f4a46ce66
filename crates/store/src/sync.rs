//! [`PgCarrierSyncStore`]: where each carrier's record sync stands (`tb_carrier_sync`), and the
//! cards a listing page names.

use crate::convert;
use crate::entity::iot_card;
use crate::error::db_err;
use crate::sql::{col, models, stmt};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::store::{CarrierSyncStore, StoreResult};
use domain::{Card, CarrierId, StoreError, SyncRound, SyncState};
use sea_orm::{ConnectionTrait, DatabaseConnection};

const READ: &str = "SELECT watermark, round_started_at, next_page, rounds, completed_at \
     FROM tb_carrier_sync WHERE carrier_id = $1";

const SAVE: &str = r#"
INSERT INTO tb_carrier_sync
    (carrier_id, watermark, round_started_at, next_page, rounds, completed_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (carrier_id) DO UPDATE SET
    watermark = EXCLUDED.watermark, round_started_at = EXCLUDED.round_started_at,
    next_page = EXCLUDED.next_page, rounds = EXCLUDED.rounds,
    completed_at = EXCLUDED.completed_at, updated_at = EXCLUDED.updated_at
"#;

const BY_ICCID: &str = "SELECT * FROM tb_iot_card \
     WHERE carrier_id = $1 AND iccid = ANY($2) AND deleted_at IS NULL ORDER BY id";

/// The PostgreSQL [`CarrierSyncStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgCarrierSyncStore {
    db: DatabaseConnection,
}

impl PgCarrierSyncStore {
    pub fn new(db: DatabaseConnection) -> Self {
        Self { db }
    }
}

#[async_trait]
impl CarrierSyncStore for PgCarrierSyncStore {
    async fn sync_state(&self, carrier: CarrierId) -> StoreResult<SyncState> {
        let row = self
            .db
            .query_one_raw(stmt(READ, [carrier.get().into()]))
            .await
            .map_err(db_err)?;
        let Some(row) = row else {
            return Ok(SyncState::new());
        };
        let started: Option<DateTime<Utc>> = col(&row, "round_started_at")?;
        let page: Option<i32> = col(&row, "next_page")?;
        let round = match (started, page) {
            (Some(started_at), Some(page)) => Some(SyncRound {
                started_at,
                next_page: u32::try_from(page).map_err(|_| {
                    StoreError::Invalid(format!("tb_carrier_sync.next_page {page} is below 1"))
                })?,
            }),
            _ => None,
        };
        Ok(SyncState {
            watermark: col(&row, "watermark")?,
            round,
            rounds: col(&row, "rounds")?,
            completed_at: col(&row, "completed_at")?,
        })
    }

    async fn save_sync_state(
        &self,
        carrier: CarrierId,
        state: &SyncState,
        now: DateTime<Utc>,
    ) -> StoreResult<()> {
        let page = state
            .round
            .map(|r| i32::try_from(r.next_page).unwrap_or(i32::MAX));
        self.db
            .execute_raw(stmt(
                SAVE,
                [
                    carrier.get().into(),
                    state.watermark.into(),
                    state.round.map(|r| r.started_at).into(),
                    page.into(),
                    state.rounds.into(),
                    state.completed_at.into(),
                    now.into(),
                ],
            ))
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn cards_by_iccid(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> StoreResult<Vec<Card>> {
        if iccids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = models::<iot_card::Entity, _>(
            &self.db,
            stmt(BY_ICCID, [carrier.get().into(), iccids.to_vec().into()]),
        )
        .await?;
        rows.into_iter().map(convert::card).collect()
    }
}
