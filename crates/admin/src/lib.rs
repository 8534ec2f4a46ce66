//! The services behind the admin API, usable by both binaries (the worker runs some of them
//! as periodic jobs). Composed from the store traits of `domain`, `polling-queue`,
//! `polling-config`, `lifecycle` and `stop-resume`.
//!
//! This crate holds no HTTP types (no axum, no status codes, no OpenAPI): `cmp-api` routes,
//! authenticates, maps [`AdminError`]s to answers and owns the documented contract (its bodies
//! and views mirror the plain inputs and answers here, field for field). It reaches PostgreSQL
//! only through the store traits and never depends on the scheduler or the task handlers.
//!
//! * [`Admin`] (`context.rs`): every dependency, built once by the binary;
//! * polling configs (`configs.rs`, `dry_run.rs`), cards (`cards.rs`, `import.rs`), devices
//!   (`devices.rs`), packages (`packages.rs`), manual trigger (`manual.rs`), asset polling
//!   control (`polling_control.rs`), the explain page (`explain.rs`, its phrases in
//!   `explain_text.rs`), a card's month of usage (`usage_month.rs`), the audit of writes
//!   (`audit.rs`), carriers as configuration and their connection test (`carriers.rs`).

pub mod alert_metrics;
pub mod alerts;
mod audit;
mod cards;
mod carrier_body;
pub mod carriers;
pub mod cleanup;
mod cleanup_run;
pub mod concurrency;
mod configs;
mod context;
mod devices;
mod dry_run;
mod error;
mod evaluation;
pub mod evaluator;
mod explain;
mod explain_text;
pub mod gateway_counts;
pub mod history;
mod import;
mod manual;
pub mod monitoring;
mod packages;
mod polling_control;
mod usage_month;
pub mod webhook;

pub use cards::{
    CardAction, CardBody, CardStatusBody, iccid_prefix_problem, iccid_problem, msisdn_problem,
};
pub use cleanup_run::{RunReport, TableReport};
pub use configs::{ConditionCheck, ConfigBody, ConfigCandidate, ConfigMatch, MAX_INTERVAL_SECS};
pub use context::{Admin, AdminParts, AdminStores};
pub use devices::{
    BindBody, BindOutcome, DeviceBody, DeviceCardResult, DeviceSwitchReport, DeviceView,
};
pub use dry_run::{DryRun, DryRunBody};
pub use error::{AdminError, FieldError};
pub use evaluation::Evaluation;
pub use explain::{
    DecisionNow, Explanation, MatchedConfigView, NextDue, PackageEvidence, ProtectEvidence,
    RealNameEvidence,
};
pub use explain_text::{ExplainPhrases, Phrase, PhraseCode};
pub use import::{ImportBody, ImportReport, MAX_IMPORT};
pub use manual::{
    CancelReport, MAX_BATCH, MAX_BY_FILTER, ManualListLen, TriggerBatch, TriggerByFilter,
    TriggerCancel, TriggerReport, TriggerSingle,
};
pub use packages::{PackageBody, PackageUsageBody, PackageUsageOutcome};
pub use polling_control::{AssetType, PollingStatusBody, PollingStatusReport};
pub use usage_month::{MAX_HOURS, MonthUsage};
