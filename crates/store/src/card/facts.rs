//! [`CardStore::facts_of`](domain::store::CardStore::facts_of): what a burst of real-name,
//! package and protect polls starts from, in one statement. Before, a burst cost three reads
//! (the cards, their devices' switches, their packages); at a poll pool's size each read is a
//! PostgreSQL transaction, and those were most of what the three polls cost the database.
//!
//! The cards are joined to their device (its polling switch) and, when asked, to the packages
//! covering them: one row per card and package, the card's columns under `c_`, the package's
//! under `p_` (a card without packages has one row whose `p_` columns are null).

use super::PgCardStore;
use crate::convert;
use crate::entity::{iot_card, package_usage};
use crate::error::db_err;
use crate::sql::{col, stmt};
use domain::CardId;
use domain::store::{CardFacts, StoreResult};
use sea_orm::{ConnectionTrait, EntityTrait, FromQueryResult, IdenStatic, Iterable};
use std::sync::LazyLock;

/// `alias.column AS prefixcolumn, ...` for every column of `E`.
fn columns<E: EntityTrait>(alias: &str, prefix: &str) -> String {
    E::Column::iter()
        .map(|c| format!("{alias}.{0} AS {prefix}{0}", c.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

const CARDS: &str = "FROM tb_iot_card c \
     LEFT JOIN tb_device d ON d.id = c.device_id AND d.deleted_at IS NULL";

const LIVE_AMONG: &str = "WHERE c.id = ANY($1) AND c.deleted_at IS NULL";

static WITHOUT_PACKAGES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, d.enable_polling AS device_enable_polling {CARDS} {LIVE_AMONG} ORDER BY c.id",
        columns::<iot_card::Entity>("c", "c_")
    )
});

/// The covering packages: the device's when the card is bound, else the card's own.
static WITH_PACKAGES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, d.enable_polling AS device_enable_polling, {} {CARDS} \
         LEFT JOIN tb_package_usage p ON (c.device_id IS NOT NULL AND p.device_id = c.device_id) \
              OR (c.device_id IS NULL AND p.iot_card_id = c.id) \
         {LIVE_AMONG} ORDER BY c.id, p.id",
        columns::<iot_card::Entity>("c", "c_"),
        columns::<package_usage::Entity>("p", "p_")
    )
});

impl PgCardStore {
    pub(super) async fn read_facts(
        &self,
        ids: &[CardId],
        packages: bool,
    ) -> StoreResult<Vec<CardFacts>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = ids.iter().map(|i| i.get()).collect();
        let sql = if packages {
            &WITH_PACKAGES
        } else {
            &WITHOUT_PACKAGES
        };
        let rows = self
            .db
            .query_all_raw(stmt(sql, [ids.into()]))
            .await
            .map_err(db_err)?;
        let mut facts: Vec<CardFacts> = Vec::new();
        for row in &rows {
            let id: i64 = col(row, "c_id")?;
            if facts.last().is_none_or(|last| last.card.id.get() != id) {
                let card = iot_card::Model::from_query_result(row, "c_").map_err(db_err)?;
                facts.push(CardFacts {
                    card: convert::card(card)?,
                    device_polling: col(row, "device_enable_polling")?,
                    packages: Vec::new(),
                });
            }
            if packages && col::<Option<i64>>(row, "p_id")?.is_some() {
                let package = package_usage::Model::from_query_result(row, "p_").map_err(db_err)?;
                if let Some(last) = facts.last_mut() {
                    last.packages.push(convert::package_usage(package)?);
                }
            }
        }
        Ok(facts)
    }
}
