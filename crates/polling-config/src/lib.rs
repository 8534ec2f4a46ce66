//! Polling configs for the whole fleet: [`PollingConfigManager`] loads `tb_polling_config`
//! through [`domain::store::PollingConfigStore`], mirrors it into the Redis hash
//! `polling:configs` (TTL 24 h), keeps the enabled ones in memory in matching order and answers
//! [`PollingConfigManager::match_config`] from memory alone. A refresher task reloads every five
//! minutes and at once when `polling:configs:changed` announces a change.
//!
//! This crate owns the config cache and the matching entry point. It must not write
//! `tb_polling_config` (the admin API does, through the store), must not spell a Redis key (the
//! names come from `polling-queue`'s [`polling_queue::Keys`]) and must not touch the queues.

mod defaults;
mod error;
mod manager;
mod matched;
mod refresher;

pub use defaults::default_configs;
pub use error::ConfigError;
pub use manager::PollingConfigManager;
pub use matched::{ConfigSnapshot, MatchedConfig};
pub use refresher::REFRESH_EVERY;
