//! The poll handlers: each takes one card of its task type, asks the carrier, writes what it
//! learnt through the store traits, lets `stop-resume` decide, and reschedules the card.
//!
//! Handlers collect data; they never decide to stop or start a card (only the protect
//! handler's forced corrections inside a protect period call the gateway directly). They reach
//! PostgreSQL only through the store traits of `domain`: this crate must not depend on sea-orm,
//! sqlx or `store`.

mod handler;

pub use handler::{Outcome, Registry, TaskHandler};
