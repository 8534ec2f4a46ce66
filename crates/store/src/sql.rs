//! Small helpers shared by the stores: raw statements, pages, row reads.

use crate::entity::iot_card;
use crate::error::db_err;
use domain::CardId;
use domain::store::{Page, Paged, StoreResult};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, PaginatorTrait,
    QueryFilter, QueryOrder, QueryResult, QuerySelect, Select, Statement, TryGetable, Value,
};

/// A PostgreSQL statement with `$n` placeholders.
pub(crate) fn stmt<I>(sql: &str, values: I) -> Statement
where
    I: IntoIterator<Item = Value>,
{
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// Reads one column of a raw row.
pub(crate) fn col<T: TryGetable>(row: &QueryResult, name: &str) -> StoreResult<T> {
    row.try_get::<T>("", name).map_err(db_err)
}

/// Runs a raw query and reads its rows as entity models.
pub(crate) async fn models<E, C>(db: &C, statement: Statement) -> StoreResult<Vec<E::Model>>
where
    E: EntityTrait,
    E::Model: FromQueryResult + Sized + Send + Sync,
    C: ConnectionTrait,
{
    E::find()
        .from_raw_sql(statement)
        .all(db)
        .await
        .map_err(db_err)
}

/// One page of a list (OFFSET is fine here: admin lists of at most 500 rows a page) and the
/// total, converted with `f`.
pub(crate) async fn paged<E, C, T>(
    db: &C,
    select: Select<E>,
    page: Page,
    f: impl Fn(E::Model) -> StoreResult<T>,
) -> StoreResult<Paged<T>>
where
    E: EntityTrait,
    E::Model: FromQueryResult + Sized + Send + Sync,
    C: ConnectionTrait,
{
    let page = Page::new(page.page, page.page_size);
    let total = select.clone().count(db).await.map_err(db_err)?;
    let rows = select
        .offset(page.offset())
        .limit(u64::from(page.page_size))
        .all(db)
        .await
        .map_err(db_err)?;
    Ok(Paged {
        items: rows.into_iter().map(f).collect::<StoreResult<_>>()?,
        total,
        page: page.page,
        page_size: page.page_size,
    })
}

/// The ids of the cards `select` finds after `after`, ascending, at most `limit`: a keyset page
/// on the primary key, which stays cheap deep into a large fleet where OFFSET would not.
pub(crate) async fn card_ids_after<C: ConnectionTrait>(
    db: &C,
    select: Select<iot_card::Entity>,
    after: Option<CardId>,
    limit: u32,
) -> StoreResult<Vec<CardId>> {
    let select = match after {
        Some(after) => select.filter(iot_card::Column::Id.gt(after.get())),
        None => select,
    };
    let ids: Vec<i64> = select
        .select_only()
        .column(iot_card::Column::Id)
        .order_by_asc(iot_card::Column::Id)
        .limit(u64::from(limit))
        .into_tuple()
        .all(db)
        .await
        .map_err(db_err)?;
    Ok(ids.into_iter().map(CardId).collect())
}

/// A count from `SELECT count(*) AS n`.
pub(crate) async fn count<C: ConnectionTrait>(db: &C, statement: Statement) -> StoreResult<u64> {
    let row = db.query_one_raw(statement).await.map_err(db_err)?;
    let n: i64 = match row {
        Some(row) => col(&row, "n")?,
        None => 0,
    };
    Ok(u64::try_from(n).unwrap_or(0))
}
