//! The services behind the admin API, usable by both binaries (the worker runs some of them
//! as periodic jobs). Composed from the store traits of `domain`, `polling-queue`,
//! `polling-config`, `lifecycle` and `stop-resume`.
//!
//! This crate holds no HTTP types (no axum, no status codes): `cmp-api` routes, authenticates
//! and maps [`AdminError`]s to answers. It reaches PostgreSQL only through the store traits and
//! never depends on the scheduler or the task handlers.

pub mod alert_metrics;
pub mod alerts;
pub mod cleanup;
mod cleanup_run;
pub mod concurrency;
mod error;
pub mod evaluator;
pub mod gateway_counts;
pub mod history;
pub mod monitoring;
pub mod webhook;

pub use cleanup_run::{RunReport, TableReport};
pub use error::{AdminError, FieldError};
