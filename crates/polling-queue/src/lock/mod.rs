//! Token-owned keys: per-card locks of the stop/resume service ([`CardLock`](card_lock::CardLock))
//! and singleton leases of the periodic jobs ([`SingletonLease`](lease::SingletonLease)), both
//! over `token_lock`.

pub(crate) mod card_lock;
pub(crate) mod lease;
mod token_lock;
