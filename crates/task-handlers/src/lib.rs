//! The poll handlers: each takes one card of its task type, asks the carrier, writes what it
//! learnt through the store traits, lets `stop-resume` decide, and reschedules the card.
//!
//! Handlers collect data; they never decide to stop or start a card (only the protect
//! handler's forced corrections inside a protect period call the gateway directly). They reach
//! PostgreSQL only through the store traits of `domain`: this crate must not depend on sea-orm,
//! sqlx or `store`.
//!
//! * [`PollingBase`]: what the four handlers share (concurrency slot per task type, the card
//!   cache, rescheduling, the matched interval) and the one poll flow that guarantees a card is
//!   never dropped from its queue by a full pool, an error or a timeout.
//! * [`PollingRealnameHandler`], [`PollingCarddataHandler`], [`PollingPackageHandler`],
//!   [`PollingProtectHandler`]: one file each, built in one place by [`build_registry`].
//! * [`PackageJobs`]: the periodic package activation check and monthly data reset, run by the
//!   scheduler as [`ActivationCheck`] and [`DataReset`].

mod carrier_sync;
mod error;
mod flow;
mod handler;
mod identities;
mod jobs;
mod periodic_jobs;
mod polling_base;
mod polling_carddata_handler;
mod polling_package_handler;
mod polling_protect_handler;
mod polling_realname_handler;
mod registry;
mod snapshots;
mod telemetry;

pub use carrier_sync::{CarrierSync, PageEffects, SYNC_EVERY, SYNC_OVERLAP, SyncReport};
pub use error::{BatchedReadError, HandlerError};
pub use flow::Polled;
pub use handler::{Outcome, Registry, TaskHandler};
pub use jobs::{JOB_BATCH, JobReport, PackageJobs};
pub use periodic_jobs::{ActivationCheck, DataReset};
pub use polling_base::{PollingBase, PollingDeps};
pub use polling_carddata_handler::PollingCarddataHandler;
pub use polling_package_handler::PollingPackageHandler;
pub use polling_protect_handler::PollingProtectHandler;
pub use polling_realname_handler::PollingRealnameHandler;
pub use registry::{HandlerDeps, HandlerSettings, build_registry};
