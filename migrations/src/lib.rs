//! The PostgreSQL schema of the polling core. Each migration is a pair of SQL files under
//! `sql/`, run through sea-orm-migration so that `cmp-api migrate` / `cmp-worker migrate` apply
//! them and record them in `seaql_migrations`.
//!
//! The SQL is plain so that an operator can read exactly what runs against their database.

pub use sea_orm_migration::prelude::*;

mod sql_migration;

use sql_migration::SqlMigration;

/// Every migration, in order.
const MIGRATIONS: &[SqlMigration] = &[
    SqlMigration {
        name: "m0001_initial",
        up: include_str!("../sql/0001_initial.up.sql"),
        down: include_str!("../sql/0001_initial.down.sql"),
    },
    SqlMigration {
        name: "m0002_reset_anchor",
        up: include_str!("../sql/0002_reset_anchor.up.sql"),
        down: include_str!("../sql/0002_reset_anchor.down.sql"),
    },
    SqlMigration {
        name: "m0003_usage_order",
        up: include_str!("../sql/0003_usage_order.up.sql"),
        down: include_str!("../sql/0003_usage_order.down.sql"),
    },
    SqlMigration {
        name: "m0004_admin_api",
        up: include_str!("../sql/0004_admin_api.up.sql"),
        down: include_str!("../sql/0004_admin_api.down.sql"),
    },
    SqlMigration {
        name: "m0005_ops_monitoring_cleanup",
        up: include_str!("../sql/0005_ops_monitoring_cleanup.up.sql"),
        down: include_str!("../sql/0005_ops_monitoring_cleanup.down.sql"),
    },
    SqlMigration {
        name: "m0006_stop_resume_intent",
        up: include_str!("../sql/0006_stop_resume_intent.up.sql"),
        down: include_str!("../sql/0006_stop_resume_intent.down.sql"),
    },
    SqlMigration {
        name: "m0007_carriers",
        up: include_str!("../sql/0007_carriers.up.sql"),
        down: include_str!("../sql/0007_carriers.down.sql"),
    },
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
