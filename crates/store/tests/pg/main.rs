//! Integration tests of the PostgreSQL stores, against a real PostgreSQL: every test owns a
//! fresh database cloned from the migrated template (`test_support::TestDb`).

mod admin;
mod batches;
mod bulk;
mod calendar;
mod cards;
mod carriers;
mod common;
mod intent;
mod packages;
mod schema;
