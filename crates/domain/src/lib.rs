//! The vocabulary of the polling core: identifiers, task types, the models of the database
//! tables, the business rules that are pure functions (config matching, month rollover, usage
//! deduction, package validity), the store traits every other crate reaches PostgreSQL through,
//! and the [`Clock`].
//!
//! This crate performs no I/O. It must not depend on sea-orm, fred, reqwest or any crate of ours.

/// Implements `as_str`, `Display` and `FromStr` for a fieldless enum stored as text.
macro_rules! str_enum {
    ($t:ty { $($v:ident => $s:literal),* $(,)? }) => {
        impl $t {
            pub const fn as_str(self) -> &'static str {
                match self { $(<$t>::$v => $s),* }
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($s => Ok(<$t>::$v),)*
                    other => Err(format!(concat!("unknown ", stringify!($t), " `{}`"), other)),
                }
            }
        }
    };
}

mod admin;
mod admin_api;
mod admin_stores;
mod assumed_calls;
mod audit;
mod budget;
pub mod calendar;
mod card;
mod carrier;
mod clock;
mod config;
mod credentials;
mod deduction;
mod device;
mod error;
pub mod figure;
mod ids;
mod ops;
mod package;
pub mod periodic;
mod ratelimit;
pub mod store;
mod stream;
mod sync;
mod task;
mod usage;

pub use admin::*;
pub use admin_api::*;
pub use assumed_calls::{AssumedCall, AssumedCalls};
pub use audit::*;
pub use budget::*;
pub use card::*;
pub use carrier::*;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::*;
pub use credentials::{Credentials, Secret};
pub use deduction::{DeductionStep, plan_deduction};
pub use device::*;
pub use error::{Cause, DomainError, StoreError};
pub use ids::*;
pub use ops::*;
pub use package::*;
#[cfg(any(test, feature = "mock"))]
pub use ratelimit::MockRateLimiter;
pub use ratelimit::{CallClass, RateLimitError, RateLimiter};
pub use stream::*;
pub use sync::*;
pub use task::{ParseTaskTypeError, TaskType};
pub use usage::*;

/// Megabytes are exact decimals, never floats: deductions and limits must add up to the byte.
pub type Megabytes = rust_decimal::Decimal;
