//! The services behind the admin API, usable by both binaries (the worker runs some of them
//! as periodic jobs). Composed from the store traits of `domain`, `polling-queue`,
//! `polling-config`, `lifecycle` and `stop-resume`.
//!
//! This crate holds no HTTP types (no axum, no status codes, no OpenAPI): `cmp-api` routes,
//! authenticates, maps [`AdminError`]s to answers and owns the documented contract (its bodies
//! and views mirror the plain inputs and answers here, field for field). It reaches PostgreSQL
//! only through the store traits and never depends on the scheduler or the task handlers.
//!
//! Folders by area, each the one owner of its part of the API:
//!
//! * the crate root: [`Admin`] (`context.rs`, every dependency, built once by the binary),
//!   [`AdminError`] (`error.rs`) and the audit of writes (`audit.rs`), shared by every area;
//! * `assets/`: what an operator manages through [`Admin`] — cards (`cards.rs`, bulk import in
//!   `import.rs`), devices, packages, manual triggers, asset polling control, a card's month of
//!   usage, and [`Evaluation`], the stop/resume decision their writes answer with;
//! * `configs/`: polling configs and which config a card matches (`mod.rs`), and the dry run of
//!   a config before it is saved (`dry_run.rs`), which runs that same matching;
//! * `explain/`: the explain page — the facts and the phrases said of them (`mod.rs`), and
//!   the phrase vocabulary with its English rendering (`text.rs`), which knows nothing of the
//!   facts;
//! * `carriers/`: carriers as configuration and their connection test (`mod.rs`), their request
//!   bodies and answers (`body.rs`);
//! * `ops/`: running the platform, services built from their own dependencies rather than
//!   [`Admin`] because the worker runs some of them — monitoring and the metrics history, the
//!   gateway counts they read, concurrency, alert rules with their evaluator and webhooks, data
//!   cleanup, and the periodic jobs of these services that the worker registers (`jobs.rs`).
//!
//! The `ops` services keep their public paths (`admin::monitoring`, `admin::alerts`, ...,
//! `admin::jobs`).

mod assets;
mod audit;
pub mod carriers;
mod configs;
mod context;
mod error;
mod explain;
mod ops;

pub use ops::{
    alert_metrics, alerts, budget, budget_gauges, cleanup, concurrency, evaluator, gateway_counts,
    history, jobs, monitoring, webhook,
};

pub use assets::cards::{
    CardAction, CardBody, CardStatusBody, iccid_prefix_problem, iccid_problem, msisdn_problem,
};
pub use assets::devices::{
    BindBody, BindOutcome, DeviceBody, DeviceCardResult, DeviceSwitchReport, DeviceView,
};
pub use assets::evaluation::{Evaluation, EvaluationAction};
pub use assets::import::{
    ImportBody, ImportMode, ImportPhase, ImportProgress, ImportReport, MAX_IMPORT, RejectedRow,
};
pub use assets::manual::{
    CancelReport, MAX_BATCH, MAX_BY_FILTER, ManualListLen, TriggerBatch, TriggerByFilter,
    TriggerCancel, TriggerReport, TriggerSingle,
};
pub use assets::packages::{PackageBody, PackageUsageBody, PackageUsageOutcome};
pub use assets::polling_control::{AssetType, PollingStatusBody, PollingStatusReport};
pub use assets::usage_month::{MAX_HOURS, MonthUsage};
pub use configs::dry_run::{DryRun, DryRunBody};
pub use configs::{ConditionCheck, ConfigBody, ConfigCandidate, ConfigMatch, MAX_INTERVAL_SECS};
pub use context::{Admin, AdminParts, AdminStores};
pub use error::{AdminError, Chain, FieldError};
pub use explain::text::{ExplainPhrases, Phrase, PhraseCode};
pub use explain::{
    DecisionNow, Explanation, MatchedConfigView, NextDue, PackageEvidence, ProtectEvidence,
    RealNameEvidence,
};
pub use ops::cleanup_run::{RunReport, TableReport};
