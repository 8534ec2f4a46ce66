//! The monthly partitions of `tb_data_usage_record`: listed from the catalogue, created ahead
//! by `cmp_ensure_usage_partitions`, and detached then dropped whole by data cleanup.

use crate::error::db_err;
use crate::sql::{col, stmt};
use chrono::NaiveDate;
use domain::store::StoreResult;
use domain::{StoreError, UsagePartition};
use sea_orm::{ConnectionTrait, DatabaseConnection};

/// Monthly partitions are named `tb_data_usage_record_YYYYMM` by the migration's function.
const PREFIX: &str = "tb_data_usage_record_";

pub(crate) async fn table_exists(db: &DatabaseConnection, table: &str) -> StoreResult<bool> {
    let row = db
        .query_one_raw(stmt(
            "SELECT to_regclass($1) IS NOT NULL AS present",
            [table.into()],
        ))
        .await
        .map_err(db_err)?;
    match row {
        Some(row) => col(&row, "present"),
        None => Ok(false),
    }
}

/// `YYYYMM` of a partition name -> its first day.
fn month_of(name: &str) -> Option<NaiveDate> {
    let digits = name.strip_prefix(PREFIX)?;
    if digits.len() != 6 {
        return None;
    }
    let year: i32 = digits.get(..4)?.parse().ok()?;
    let month: u32 = digits.get(4..)?.parse().ok()?;
    NaiveDate::from_ymd_opt(year, month, 1)
}

fn next_month(day: NaiveDate) -> Option<NaiveDate> {
    day.checked_add_months(chrono::Months::new(1))
}

pub(crate) async fn list(db: &DatabaseConnection) -> StoreResult<Vec<UsagePartition>> {
    let rows = db
        .query_all_raw(stmt(
            "SELECT c.relname::text AS name, c.reltuples::float8 AS tuples \
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
             WHERE i.inhparent = 'tb_data_usage_record'::regclass ORDER BY c.relname",
            [],
        ))
        .await
        .map_err(db_err)?;
    let mut out = Vec::new();
    for row in rows {
        let name: String = col(&row, "name")?;
        let tuples: f64 = col(&row, "tuples")?;
        let Some(from) = month_of(&name) else {
            continue; // the default partition
        };
        let Some(to) = next_month(from) else {
            continue;
        };
        out.push(UsagePartition {
            name,
            from,
            to,
            estimated_rows: if tuples > 0.0 { tuples as u64 } else { 0 },
        });
    }
    Ok(out)
}

/// Detaches the partition (a short lock on the parent), then drops the detached table.
pub(crate) async fn detach_and_drop(db: &DatabaseConnection, name: &str) -> StoreResult<()> {
    // The name reaches SQL only after it parsed as one of ours: `tb_data_usage_record_` and six
    // digits, nothing else.
    if month_of(name).is_none() {
        return Err(StoreError::Invalid(format!(
            "`{name}` is not a monthly usage partition"
        )));
    }
    db.execute_unprepared(&format!(
        "ALTER TABLE tb_data_usage_record DETACH PARTITION {name}"
    ))
    .await
    .map_err(db_err)?;
    db.execute_unprepared(&format!("DROP TABLE {name}"))
        .await
        .map_err(db_err)?;
    Ok(())
}

pub(crate) async fn ensure(
    db: &DatabaseConnection,
    from: NaiveDate,
    months: u32,
) -> StoreResult<u32> {
    let months = i32::try_from(months).unwrap_or(i32::MAX);
    let row = db
        .query_one_raw(stmt(
            "SELECT cmp_ensure_usage_partitions($1, $2) AS n",
            [from.into(), months.into()],
        ))
        .await
        .map_err(db_err)?;
    let n: i32 = match row {
        Some(row) => col(&row, "n")?,
        None => 0,
    };
    Ok(u32::try_from(n).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_monthly_names_parse() {
        assert_eq!(
            month_of("tb_data_usage_record_202603"),
            NaiveDate::from_ymd_opt(2026, 3, 1)
        );
        assert_eq!(month_of("tb_data_usage_record_default"), None);
        assert_eq!(month_of("tb_data_usage_record_202613"), None);
        assert_eq!(month_of("tb_data_usage_record_2026031; DROP"), None);
    }
}
