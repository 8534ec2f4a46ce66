//! [`PgCardStore`]: `tb_iot_card`, its audit table `tb_card_state_log` and its usage history
//! `tb_data_usage_record`.

use crate::batch::realname::{RealNameAnswer, RealNamePoll};
use crate::batch::usage::{UsageAnswer, UsagePoll};
use crate::bulk::{BULK_CHUNK, insert_cards};
use crate::card_sql::{COUNT_POLLING_ENABLED, POLLING_ENABLED_AMONG, SET_NETWORK_STATE};
use crate::convert;
use crate::entity::{card_state_log, iot_card};
use crate::error::{db_err, not_found};
use crate::sql::{card_ids_after, col, count, models, paged, stmt};
use async_trait::async_trait;
use batch::Batcher;
use chrono::{DateTime, Utc};
use domain::store::{
    CardFacts, CardStore, IntentClose, Page, Paged, RealNameWrite, StateWrite, StoreResult,
    UsageRecorded,
};
use domain::{
    Card, CardFilter, CardId, CardMatchFields, CardStateLog, DeviceId, GatewayOutcome, MonthUsage,
    NewCard, NewCardStateLog, RealNameStatus, StopReason, StoreError,
};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection,
    EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Select, TransactionTrait, UpdateMany,
};

mod facts;
mod scan;

/// The PostgreSQL [`CardStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgCardStore {
    db: DatabaseConnection,
    /// Group commit of `record_usage` (see `batch/usage.rs`), shared by clones.
    usage: Batcher<UsagePoll, UsageAnswer>,
    /// Group commit of `set_real_name` (see `batch/realname.rs`), shared by clones.
    real_name: Batcher<RealNamePoll, RealNameAnswer>,
}

impl PgCardStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgCardStore {
            usage: crate::batch::usage::writer(db.clone()),
            real_name: crate::batch::realname::writer(db.clone()),
            db,
        }
    }

    fn live() -> Select<iot_card::Entity> {
        iot_card::Entity::find().filter(iot_card::Column::DeletedAt.is_null())
    }

    /// Applies `set` to the live card `id` (and bumps `updated_at`); returns the new row.
    async fn update_live(
        &self,
        id: CardId,
        set: impl FnOnce(UpdateMany<iot_card::Entity>) -> UpdateMany<iot_card::Entity>,
    ) -> StoreResult<Card> {
        let q = iot_card::Entity::update_many()
            .col_expr(iot_card::Column::UpdatedAt, Expr::current_timestamp())
            .filter(iot_card::Column::Id.eq(id.get()))
            .filter(iot_card::Column::DeletedAt.is_null());
        let rows = set(q).exec_with_returning(&self.db).await.map_err(db_err)?;
        match rows.into_iter().next() {
            Some(m) => convert::card(m),
            None => Err(not_found("card", id)),
        }
    }
}

#[async_trait]
impl CardStore for PgCardStore {
    async fn get(&self, id: CardId) -> StoreResult<Option<Card>> {
        Self::live()
            .filter(iot_card::Column::Id.eq(id.get()))
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(convert::card)
            .transpose()
    }

    async fn get_many(&self, ids: &[CardId]) -> StoreResult<Vec<Card>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = ids.iter().map(|i| i.get()).collect();
        let rows = models::<iot_card::Entity, _>(
            &self.db,
            stmt(
                "SELECT * FROM tb_iot_card WHERE id = ANY($1) AND deleted_at IS NULL ORDER BY id",
                [ids.into()],
            ),
        )
        .await?;
        rows.into_iter().map(convert::card).collect()
    }

    async fn facts_of(&self, ids: &[CardId], packages: bool) -> StoreResult<Vec<CardFacts>> {
        self.read_facts(ids, packages).await
    }

    async fn insert(&self, card: &NewCard) -> StoreResult<Card> {
        let model = iot_card::ActiveModel {
            iccid: Set(card.iccid.clone()),
            msisdn: Set(card.msisdn.clone()),
            carrier_id: Set(card.carrier_id.get()),
            card_category: Set(card.card_category.as_str().to_owned()),
            status: Set(card.status),
            real_name_status: Set(i16::from(card.real_name_status)),
            network_status: Set(i16::from(card.network_status)),
            enable_polling: Set(card.enable_polling),
            device_id: Set(card.device_id.map(DeviceId::get)),
            ..Default::default()
        }
        .insert(&self.db)
        .await
        .map_err(db_err)?;
        convert::card(model)
    }

    async fn insert_bulk(&self, cards: &[NewCard]) -> StoreResult<Vec<CardId>> {
        if cards.is_empty() {
            return Ok(Vec::new());
        }
        let txn = self.db.begin().await.map_err(db_err)?;
        let mut ids = Vec::with_capacity(cards.len());
        for chunk in cards.chunks(BULK_CHUNK) {
            let rows = txn
                .query_all_raw(insert_cards(chunk))
                .await
                .map_err(db_err)?;
            for row in &rows {
                ids.push(CardId(row.try_get_by_index::<i64>(0).map_err(db_err)?));
            }
        }
        txn.commit().await.map_err(db_err)?;
        Ok(ids)
    }

    async fn list(&self, filter: &CardFilter, page: Page) -> StoreResult<Paged<Card>> {
        let q = Self::filtered(filter).order_by_asc(iot_card::Column::Id);
        paged(&self.db, q, page, convert::card).await
    }

    async fn list_ids(
        &self,
        filter: &CardFilter,
        after: Option<CardId>,
        limit: u32,
    ) -> StoreResult<Vec<CardId>> {
        card_ids_after(&self.db, Self::filtered(filter), after, limit).await
    }

    async fn page_polling_enabled(
        &self,
        after: Option<CardId>,
        limit: u32,
    ) -> StoreResult<Vec<CardMatchFields>> {
        self.scan_polling_enabled(after, limit).await
    }

    async fn ids_of_devices(&self, devices: &[DeviceId]) -> StoreResult<Vec<CardId>> {
        if devices.is_empty() {
            return Ok(Vec::new());
        }
        let devices: Vec<i64> = devices.iter().map(|d| d.get()).collect();
        let rows = self
            .db
            .query_all_raw(stmt(
                "SELECT id FROM tb_iot_card WHERE device_id = ANY($1) AND deleted_at IS NULL \
                 ORDER BY id",
                [devices.into()],
            ))
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| col::<i64>(r, "id").map(CardId))
            .collect()
    }

    async fn count(&self) -> StoreResult<u64> {
        Self::live().count(&self.db).await.map_err(db_err)
    }

    async fn count_polling_enabled(&self) -> StoreResult<u64> {
        count(&self.db, stmt(COUNT_POLLING_ENABLED, [])).await
    }

    async fn polling_enabled_among(&self, ids: &[CardId]) -> StoreResult<Vec<CardId>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = ids.iter().map(|i| i.get()).collect();
        let row = self
            .db
            .query_one_raw(stmt(POLLING_ENABLED_AMONG, [ids.into()]))
            .await
            .map_err(db_err)?;
        let ids: Option<Vec<i64>> = match row {
            Some(row) => col(&row, "ids")?,
            None => None,
        };
        Ok(ids.unwrap_or_default().into_iter().map(CardId).collect())
    }

    async fn set_real_name(
        &self,
        id: CardId,
        status: RealNameStatus,
    ) -> StoreResult<Option<RealNameWrite>> {
        self.real_name
            .submit(RealNamePoll { id, status })
            .await
            .map_err(|closed| StoreError::Database(domain::Cause::new(closed)))?
    }

    async fn set_enable_polling(&self, id: CardId, enabled: bool) -> StoreResult<Card> {
        self.update_live(id, |q| {
            q.col_expr(iot_card::Column::EnablePolling, Expr::value(enabled))
        })
        .await
    }

    async fn set_status(&self, id: CardId, status: i16) -> StoreResult<Card> {
        self.update_live(id, |q| {
            q.col_expr(iot_card::Column::Status, Expr::value(status))
        })
        .await
    }

    async fn set_device(&self, id: CardId, device: Option<DeviceId>) -> StoreResult<Card> {
        let device = device.map(DeviceId::get);
        self.update_live(id, |q| {
            q.col_expr(iot_card::Column::DeviceId, Expr::value(device))
        })
        .await
    }

    async fn soft_delete(&self, id: CardId) -> StoreResult<bool> {
        let res = iot_card::Entity::update_many()
            .col_expr(iot_card::Column::DeletedAt, Expr::current_timestamp())
            .col_expr(iot_card::Column::UpdatedAt, Expr::current_timestamp())
            .filter(iot_card::Column::Id.eq(id.get()))
            .filter(iot_card::Column::DeletedAt.is_null())
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(res.rows_affected > 0)
    }

    async fn record_state_change(&self, entry: &NewCardStateLog) -> StoreResult<()> {
        let reason = StopReason::to_column(entry.stop_reason);
        let txn = self.db.begin().await.map_err(db_err)?;
        let res = txn
            .execute_raw(stmt(
                SET_NETWORK_STATE,
                [
                    entry.card_id.get().into(),
                    i16::from(entry.to_status).into(),
                    reason.into(),
                ],
            ))
            .await
            .map_err(db_err)?;
        if res.rows_affected() == 0 {
            // Dropping the transaction rolls it back.
            return Err(not_found("card", entry.card_id));
        }
        card_state_log::ActiveModel {
            iot_card_id: Set(entry.card_id.get()),
            from_status: Set(i16::from(entry.from_status)),
            to_status: Set(i16::from(entry.to_status)),
            stop_reason: Set(reason.to_owned()),
            trigger: Set(entry.trigger.clone()),
            gateway_outcome: Set(entry.gateway_outcome.as_str().to_owned()),
            trace_id: Set(entry.trace_id.clone()),
            ..Default::default()
        }
        .insert(&txn)
        .await
        .map_err(db_err)?;
        txn.commit().await.map_err(db_err)
    }

    async fn append_state_if(
        &self,
        entry: &NewCardStateLog,
        from_reason: Option<StopReason>,
    ) -> StoreResult<StateWrite> {
        crate::intent::append_state_if(&self.db, entry, from_reason).await
    }

    async fn close_intent(&self, row: i64, outcome: GatewayOutcome) -> StoreResult<IntentClose> {
        crate::intent::close_intent(&self.db, row, outcome, "").await
    }

    async fn close_intent_noted(
        &self,
        row: i64,
        outcome: GatewayOutcome,
        note: &'static str,
    ) -> StoreResult<IntentClose> {
        crate::intent::close_intent(&self.db, row, outcome, note).await
    }

    async fn interrupt_stale_intents(
        &self,
        id: CardId,
        older_than: std::time::Duration,
    ) -> StoreResult<u64> {
        crate::intent::interrupt_stale_intents(&self.db, id, older_than).await
    }

    async fn state_log(&self, id: CardId, page: Page) -> StoreResult<Paged<CardStateLog>> {
        let q = card_state_log::Entity::find()
            .filter(card_state_log::Column::IotCardId.eq(id.get()))
            .order_by_desc(card_state_log::Column::CreatedAt)
            .order_by_desc(card_state_log::Column::Id);
        paged(&self.db, q, page, convert::state_log).await
    }

    async fn record_usage(
        &self,
        id: CardId,
        reported: &MonthUsage,
        asked_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> StoreResult<Option<UsageRecorded>> {
        let poll = UsagePoll {
            id,
            reported: reported.clone(),
            asked_at,
            now,
        };
        self.usage
            .submit(poll)
            .await
            .map_err(|closed| StoreError::Database(domain::Cause::new(closed)))?
    }
}
