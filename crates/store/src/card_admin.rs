//! [`PgCardAdminStore`]: the admin API's card search, import checks and the grouped counts of
//! a polling-config dry run. Kept apart from `card.rs`, the polling hot path.

use crate::convert;
use crate::entity::iot_card::{self, Column as C};
use crate::error::db_err;
use crate::sql::{card_ids_after, col, paged, stmt};
use async_trait::async_trait;
use domain::store::{CardAdminStore, Page, Paged, StoreResult};
use domain::{
    Card, CardCategory, CardId, CardQuery, CarrierId, MatchGroup, NetworkStatus, RealNameStatus,
};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Select,
};

/// ICCIDs checked per statement by [`CardAdminStore::existing_iccids`].
const ICCID_CHUNK: usize = 20_000;

/// The live cards among a chunk of ICCIDs: one array parameter, one index probe each.
const EXISTING_ICCIDS: &str =
    "SELECT iccid FROM tb_iot_card WHERE deleted_at IS NULL AND iccid = ANY($1)";

/// One `GROUP BY` over the fields config matching reads, among the cards that are polled.
const MATCH_GROUPS: &str = r#"
SELECT c.carrier_id, c.card_category, c.real_name_status, c.network_status, count(*) AS n
FROM tb_iot_card c
WHERE c.enable_polling AND c.deleted_at IS NULL
  AND (c.device_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM tb_device d
        WHERE d.id = c.device_id AND d.deleted_at IS NULL AND NOT d.enable_polling))
GROUP BY 1, 2, 3, 4
"#;

/// The PostgreSQL [`CardAdminStore`]. Cheap to clone: the connection is a pool.
#[derive(Debug, Clone)]
pub struct PgCardAdminStore {
    db: DatabaseConnection,
}

impl PgCardAdminStore {
    pub fn new(db: DatabaseConnection) -> Self {
        PgCardAdminStore { db }
    }
}

/// `LIKE` metacharacters in a prefix are matched literally.
fn like_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for ch in prefix.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('%');
    out
}

fn filtered(q: &CardQuery) -> Select<iot_card::Entity> {
    let mut s = iot_card::Entity::find().filter(C::DeletedAt.is_null());
    if let Some(p) = &q.iccid_prefix {
        s = s.filter(C::Iccid.like(like_prefix(p)));
    }
    if let Some(m) = &q.msisdn {
        s = s.filter(C::Msisdn.eq(m.as_str()));
    }
    if let Some(d) = q.device_id {
        s = s.filter(C::DeviceId.eq(d.get()));
    }
    if let Some(c) = q.carrier_id {
        s = s.filter(C::CarrierId.eq(c.get()));
    }
    if let Some(st) = q.status {
        s = s.filter(C::Status.eq(st));
    }
    if let Some(n) = q.network_status {
        s = s.filter(C::NetworkStatus.eq(i16::from(n)));
    }
    if let Some(r) = q.stop_reason {
        s = s.filter(C::StopReason.eq(r.as_str()));
    }
    if let Some(c) = q.card_category {
        s = s.filter(C::CardCategory.eq(c.as_str()));
    }
    if let Some(r) = q.real_name_status {
        s = s.filter(C::RealNameStatus.eq(i16::from(r)));
    }
    if let Some(e) = q.enable_polling {
        s = s.filter(C::EnablePolling.eq(e));
    }
    s
}

#[async_trait]
impl CardAdminStore for PgCardAdminStore {
    async fn search(&self, query: &CardQuery, page: Page) -> StoreResult<Paged<Card>> {
        paged(
            &self.db,
            filtered(query).order_by_asc(C::Id),
            page,
            convert::card,
        )
        .await
    }

    async fn search_ids(
        &self,
        query: &CardQuery,
        after: Option<CardId>,
        limit: u32,
    ) -> StoreResult<Vec<CardId>> {
        card_ids_after(&self.db, filtered(query), after, limit).await
    }

    async fn existing_iccids(&self, iccids: &[String]) -> StoreResult<Vec<String>> {
        let mut found = Vec::new();
        for chunk in iccids.chunks(ICCID_CHUNK) {
            let rows = self
                .db
                .query_all_raw(stmt(EXISTING_ICCIDS, [chunk.to_vec().into()]))
                .await
                .map_err(db_err)?;
            for row in &rows {
                found.push(col::<String>(row, "iccid")?);
            }
        }
        Ok(found)
    }

    async fn match_groups(&self) -> StoreResult<Vec<MatchGroup>> {
        let rows = self
            .db
            .query_all_raw(stmt(MATCH_GROUPS, []))
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|row| {
                let category: String = col(row, "card_category")?;
                let real_name: i16 = col(row, "real_name_status")?;
                let network: i16 = col(row, "network_status")?;
                let n: i64 = col(row, "n")?;
                Ok(MatchGroup {
                    carrier_id: CarrierId(col(row, "carrier_id")?),
                    card_category: category
                        .parse::<CardCategory>()
                        .map_err(|e| crate::error::bad_column("card_category", e))?,
                    real_name_status: RealNameStatus::try_from(real_name)
                        .map_err(|e| crate::error::bad_column("real_name_status", e))?,
                    network_status: NetworkStatus::try_from(network)
                        .map_err(|e| crate::error::bad_column("network_status", e))?,
                    cards: u64::try_from(n).unwrap_or(0),
                })
            })
            .collect()
    }
}
