//! sea-orm entities, one module per table of `migrations/sql/0001_initial.up.sql`.
//!
//! They mirror the columns exactly (NUMERIC as `Decimal`, TIMESTAMPTZ as `DateTime<Utc>`); the
//! CHECK constraints and partial unique indexes live in the schema, not here. Relations are not
//! declared: the stores join in SQL where they need to.

pub mod admin_audit_log;
pub mod api_key;
pub mod card_state_log;
pub mod carrier;
pub mod data_cleanup_config;
pub mod data_cleanup_log;
pub mod data_usage_record;
pub mod device;
pub mod iot_card;
pub mod package;
pub mod package_usage;
pub mod polling_alert_history;
pub mod polling_alert_rule;
pub mod polling_config;
pub mod polling_manual_trigger_log;
