//! Stop and resume: **the only place in the system that decides to stop (suspend) or start
//! (resume) a card's network service**, and the only caller of the gateway's `stop`/`start`
//! outside operator tooling built on this crate.
//!
//! * [`decide`] is the decision table of `docs/rules.md` ("Stop / resume") as a pure function of
//!   the card, its packages, its device's protect state and the time: unit-tested row by row.
//! * [`StopResumeService::evaluate_and_act`] reads, decides and acts for every caller under a
//!   per-card Redis lock (`polling:lock:card:{id}`), so two evaluations of one card never both
//!   call the gateway; the database changes only after the carrier said yes, and every stop,
//!   start and reason change appends one `tb_card_state_log` row (invariants 4 and 5 of
//!   `docs/invariants.md`). A stop or start is that row written `pending` before the call (a
//!   durable intent, compare-and-set on the card's state, one per card in the database), so a
//!   worker killed after the carrier's yes, or a second evaluation after Redis lost the lock,
//!   costs no call the log does not account for (`ok`, `failed`, `interrupted`).
//! * Operator stop/start ([`StopResumeService::stop_by_operator`], `start_by_operator`) and the
//!   protect handler's forced correction ([`StopResumeService::enforce_protect`]) run on the
//!   same locked, audited path.
//! * Network status is a fact config matching reads: after every stop, start and reason change
//!   the card is read again and its queues are aligned with the config it now matches, through
//!   the lifecycle service.
//!
//! This crate reaches PostgreSQL only through the store traits of `domain`, Redis only through
//! `polling-queue` and the carrier only through [`gateway::CarrierGateway`]. It is the one
//! owner of "a card's stop state changed → its queues follow": every change it writes is
//! aligned once, on the card as written, and returned to the caller, who must not align or
//! read the card again.

mod decision;
mod decisive;
mod device;
mod error;
mod intent;
mod lock;
pub mod metrics;
mod protect;
mod service;
mod settings;
mod trace;
mod trigger;

pub use decision::{
    Action, Decision, Evidence, NothingWhy, ProtectEvidence, decide, evidence,
    table_asks_for_action,
};
pub use decisive::{NEAR_LIMIT_LEFT, UsageReading, decisive_poll};
pub use device::DeviceCardOutcome;
pub use error::{CHANGE_LOCK_DEFAULT, StopResumeError};
pub use intent::{REFUSAL_BACKOFF, REFUSALS_BEFORE_BACKOFF};
pub use protect::{ProtectChecked, protect_decision};
pub use service::{Evaluated, StopResumeService};
pub use settings::StopResumeSettings;
pub use trigger::Trigger;
