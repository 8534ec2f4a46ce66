//! The reads of [`PgCardStore`] that select cards by criteria rather than by id: the admin
//! filter ([`CardFilter`]) and the keyset scan of polling-enabled cards that queue alignment
//! pages through.

use super::PgCardStore;
use crate::card_sql::{PAGE_POLLING_ENABLED, SCAN_SETTINGS};
use crate::entity::iot_card;
use crate::error::{bad_column, db_err};
use crate::sql::{col, stmt};
use domain::store::StoreResult;
use domain::{
    CardCategory, CardFilter, CardId, CardMatchFields, CarrierId, NetworkStatus, RealNameStatus,
};
use sea_orm::{ColumnTrait, ConnectionTrait, QueryFilter, Select, TransactionTrait};

impl PgCardStore {
    /// The live cards `filter` matches (unordered).
    pub(super) fn filtered(filter: &CardFilter) -> Select<iot_card::Entity> {
        use iot_card::Column as C;
        let mut q = Self::live();
        if let Some(d) = filter.device_id {
            q = q.filter(C::DeviceId.eq(d.get()));
        }
        if let Some(c) = filter.carrier_id {
            q = q.filter(C::CarrierId.eq(c.get()));
        }
        if let Some(s) = filter.network_status {
            q = q.filter(C::NetworkStatus.eq(i16::from(s)));
        }
        if let Some(c) = filter.card_category {
            q = q.filter(C::CardCategory.eq(c.as_str()));
        }
        if let Some(iccid) = &filter.iccid {
            q = q.filter(C::Iccid.eq(iccid.as_str()));
        }
        q
    }

    /// One page of the polling-enabled cards after `after` (by id), with the fields the
    /// polling-config matcher reads.
    pub(super) async fn scan_polling_enabled(
        &self,
        after: Option<CardId>,
        limit: u32,
    ) -> StoreResult<Vec<CardMatchFields>> {
        let after = after.map_or(i64::MIN, CardId::get);
        let txn = self.db.begin().await.map_err(db_err)?;
        txn.execute_unprepared(SCAN_SETTINGS)
            .await
            .map_err(db_err)?;
        let row = txn
            .query_one_raw(stmt(
                PAGE_POLLING_ENABLED,
                [after.into(), i64::from(limit).into()],
            ))
            .await
            .map_err(db_err)?;
        txn.commit().await.map_err(db_err)?;
        let Some(row) = row else {
            return Ok(Vec::new());
        };
        // `array_agg` of no row is NULL: an empty page.
        let ids: Option<Vec<i64>> = col(&row, "ids")?;
        let Some(ids) = ids else {
            return Ok(Vec::new());
        };
        let carriers: Vec<i64> = col(&row, "carriers")?;
        let industry: Vec<bool> = col(&row, "industry")?;
        let real_name: Vec<i16> = col(&row, "real_name")?;
        let network: Vec<i16> = col(&row, "network")?;
        let n = ids.len();
        if [
            carriers.len(),
            industry.len(),
            real_name.len(),
            network.len(),
        ] != [n; 4]
        {
            return Err(bad_column(
                "page_polling_enabled",
                "arrays of unequal length",
            ));
        }
        let mut page = Vec::with_capacity(n);
        for ((((id, carrier), industry), real_name), network) in ids
            .into_iter()
            .zip(carriers)
            .zip(industry)
            .zip(real_name)
            .zip(network)
        {
            page.push(CardMatchFields {
                id: CardId(id),
                carrier_id: CarrierId(carrier),
                card_category: if industry {
                    CardCategory::Industry
                } else {
                    CardCategory::Normal
                },
                real_name_status: RealNameStatus::try_from(real_name)
                    .map_err(|e| bad_column("real_name_status", e))?,
                network_status: NetworkStatus::try_from(network)
                    .map_err(|e| bad_column("network_status", e))?,
            });
        }
        // Every aggregate reads the rows in the same order, so the arrays line up; that order
        // is the subquery's (by id) in practice, and re-sorted here in the unlikely other case.
        if !page.is_sorted_by_key(|c| c.id) {
            page.sort_unstable_by_key(|c| c.id);
        }
        Ok(page)
    }
}
