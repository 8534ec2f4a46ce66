//! The PostgreSQL schema of the polling core. Each migration is a pair of SQL files under
//! `sql/`, run through sea-orm-migration so that `cmp-api migrate` / `cmp-worker migrate` apply
//! them and record them in `seaql_migrations`.
//!
//! The SQL is plain so that an operator can read exactly what runs against their database.

pub use sea_orm_migration::prelude::*;

mod sql_migration;

use sql_migration::SqlMigration;

/// The migration `m<stem>`, run from `sql/<stem>.up.sql` and undone by `sql/<stem>.down.sql`:
/// one stem names the migration and both its files, so they cannot drift apart.
macro_rules! sql_migration {
    ($stem:literal) => {
        SqlMigration {
            name: concat!("m", $stem),
            up: include_str!(concat!("../sql/", $stem, ".up.sql")),
            down: include_str!(concat!("../sql/", $stem, ".down.sql")),
        }
    };
}

/// Every migration, in order.
const MIGRATIONS: &[SqlMigration] = &[
    sql_migration!("0001_initial"),
    sql_migration!("0002_reset_anchor"),
    sql_migration!("0003_usage_order"),
    sql_migration!("0004_admin_api"),
    sql_migration!("0005_ops_monitoring_cleanup"),
    sql_migration!("0006_stop_resume_intent"),
    sql_migration!("0007_carriers"),
    sql_migration!("0008_carrier_stream"),
    sql_migration!("0009_carrier_sync"),
    sql_migration!("0010_carrier_round_ratio"),
    sql_migration!("0011_trace_ids"),
    sql_migration!("0012_carrier_assumed_calls"),
];

/// The migrator both binaries and the test harness run.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        MIGRATIONS
            .iter()
            .map(|m| Box::new(*m) as Box<dyn MigrationTrait>)
            .collect()
    }
}

/// A fingerprint of the whole schema (every migration's name and SQL). The test harness names
/// its template database after it, so a changed migration gets a fresh template.
pub fn schema_fingerprint() -> String {
    // FNV-1a, 64 bit: stable across builds and platforms, unlike `DefaultHasher`.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for m in MIGRATIONS {
        for b in m.name.bytes().chain(m.up.bytes()).chain(m.down.bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_stable_and_names_are_ordered() {
        assert_eq!(schema_fingerprint(), schema_fingerprint());
        let names: Vec<&str> = MIGRATIONS.iter().map(|m| m.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }
}
