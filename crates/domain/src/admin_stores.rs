//! The store traits of the admin side: alert rules, data cleanup, the manual trigger log, API
//! keys, the admin API's card reads and writes, and the audit of its writes. Re-exported from
//! [`crate::store`], next to the polling core's own stores.

use crate::store::{Page, Paged, StoreResult};
use crate::{
    AdminAudit, AlertHistory, AlertRule, AlertRuleId, AlertRuleInput, ApiKey, ApiKeyId, ApiKeyRole,
    Card, CardId, CardQuery, CarrierAccount, CarrierAccountInput, CarrierId, CleanupConfig,
    CleanupConfigId, CleanupConfigInput, CleanupLog, ManualTriggerLog, MatchGroup, NewAdminAudit,
    TaskType, UsagePartition,
};
use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;

/// Alert rules and their history.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait AlertStore: Send + Sync {
    async fn list_rules(&self, page: Page) -> StoreResult<Paged<AlertRule>>;
    async fn enabled_rules(&self) -> StoreResult<Vec<AlertRule>>;
    async fn get_rule(&self, id: AlertRuleId) -> StoreResult<Option<AlertRule>>;
    async fn insert_rule(&self, rule: &AlertRuleInput) -> StoreResult<AlertRule>;
    async fn update_rule(&self, id: AlertRuleId, rule: &AlertRuleInput) -> StoreResult<AlertRule>;
    async fn delete_rule(&self, id: AlertRuleId) -> StoreResult<bool>;
    /// Opens a firing of `rule` (not yet notified).
    async fn record_firing(
        &self,
        rule: AlertRuleId,
        value: Decimal,
        at: DateTime<Utc>,
    ) -> StoreResult<AlertHistory>;
    /// The rule's open (unresolved) firing, if any.
    async fn open_firing(&self, rule: AlertRuleId) -> StoreResult<Option<AlertHistory>>;
    /// When the rule last fired (open or resolved).
    async fn last_fired_at(&self, rule: AlertRuleId) -> StoreResult<Option<DateTime<Utc>>>;
    /// Open firings of every rule.
    async fn open_firings(&self) -> StoreResult<Vec<AlertHistory>>;
    /// Records a webhook outcome of history row `id`: of its resolution when `resolution`,
    /// else of its firing; `error` when delivery gave up.
    async fn set_notified(
        &self,
        id: i64,
        resolution: bool,
        delivered: bool,
        error: Option<String>,
    ) -> StoreResult<()>;
    /// Marks the rule's open firing (if any) resolved.
    async fn resolve(&self, rule: AlertRuleId, at: DateTime<Utc>) -> StoreResult<u64>;
    async fn history(
        &self,
        rule: Option<AlertRuleId>,
        page: Page,
    ) -> StoreResult<Paged<AlertHistory>>;
}

/// Data cleanup configs, their runs, and the deletions themselves.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait CleanupStore: Send + Sync {
    /// Creates the monthly partitions of `tb_data_usage_record` (boundaries at UTC
    /// midnight, see `docs/decisions.md`) for the month of `from` and
    /// the `months - 1` after it where missing (`cmp_ensure_usage_partitions`). Returns how
    /// many were created.
    async fn ensure_usage_partitions(&self, from: NaiveDate, months: u32) -> StoreResult<u32>;
    async fn list_configs(&self, page: Page) -> StoreResult<Paged<CleanupConfig>>;
    async fn get_config(&self, id: CleanupConfigId) -> StoreResult<Option<CleanupConfig>>;
    async fn insert_config(&self, config: &CleanupConfigInput) -> StoreResult<CleanupConfig>;
    async fn update_config(
        &self,
        id: CleanupConfigId,
        config: &CleanupConfigInput,
    ) -> StoreResult<CleanupConfig>;
    async fn delete_config(&self, id: CleanupConfigId) -> StoreResult<bool>;
    /// Rows of `table` older than `cutoff` (a cleanable table only).
    async fn count_older_than(&self, table: &str, cutoff: DateTime<Utc>) -> StoreResult<u64>;
    /// Deletes at most `batch` rows of `table` older than `cutoff`; returns how many.
    async fn delete_older_than(
        &self,
        table: &str,
        cutoff: DateTime<Utc>,
        batch: u32,
    ) -> StoreResult<u64>;
    /// Whether `table` exists yet (the audit table comes with the API's migrations).
    async fn table_exists(&self, table: &str) -> StoreResult<bool>;
    /// The monthly partitions of `tb_data_usage_record` (not the default one), oldest first.
    async fn usage_partitions(&self) -> StoreResult<Vec<UsagePartition>>;
    /// Detaches one monthly partition of the usage table, then drops it.
    async fn drop_usage_partition(&self, name: &str) -> StoreResult<()>;
    async fn start_log(&self, table: &str, run_id: Option<String>) -> StoreResult<CleanupLog>;
    /// Rows deleted so far by a running log row.
    async fn set_progress(&self, id: i64, rows_deleted: i64) -> StoreResult<()>;
    /// Log rows still `running`.
    async fn running(&self) -> StoreResult<Vec<CleanupLog>>;
    async fn finish_log(
        &self,
        id: i64,
        rows_deleted: i64,
        error: Option<String>,
    ) -> StoreResult<()>;
    async fn logs(&self, page: Page) -> StoreResult<Paged<CleanupLog>>;
}

/// The manual trigger audit log.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait ManualTriggerLogStore: Send + Sync {
    async fn append(
        &self,
        who: &str,
        scope: &serde_json::Value,
        task_types: &[TaskType],
        count: i64,
    ) -> StoreResult<ManualTriggerLog>;
    async fn list(&self, page: Page) -> StoreResult<Paged<ManualTriggerLog>>;
}

/// Carriers as configuration (`tb_carrier`). Credentials go in and come out only as
/// [`crate::Credentials`], whose values never print.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait CarrierStore: Send + Sync {
    async fn list(&self, page: Page) -> StoreResult<Paged<CarrierAccount>>;
    /// Every carrier, enabled or not, by id: what the gateways are built from.
    async fn all(&self) -> StoreResult<Vec<CarrierAccount>>;
    async fn get(&self, id: CarrierId) -> StoreResult<Option<CarrierAccount>>;
    /// A new carrier; `Conflict` when the id is taken. The input's credentials are required.
    async fn insert(&self, input: &CarrierAccountInput) -> StoreResult<CarrierAccount>;
    /// Replaces every field; `credentials: None` keeps the stored ones. `NotFound` when absent.
    async fn update(&self, input: &CarrierAccountInput) -> StoreResult<CarrierAccount>;
    /// Enables or disables; `None`: no such carrier.
    async fn set_enabled(
        &self,
        id: CarrierId,
        enabled: bool,
    ) -> StoreResult<Option<CarrierAccount>>;
    /// The newest `updated_at` over all carriers and their count: a cheap change check for
    /// the processes that cache the carriers.
    async fn version(&self) -> StoreResult<(Option<DateTime<Utc>>, u64)>;
}

/// API keys (hashes only).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait ApiKeyStore: Send + Sync {
    async fn insert(&self, name: &str, role: ApiKeyRole, key_hash: &str) -> StoreResult<ApiKey>;
    /// The live (not revoked) key with this hash; touches `last_used_at`.
    async fn authenticate(&self, key_hash: &str) -> StoreResult<Option<ApiKey>>;
    async fn revoke(&self, id: ApiKeyId) -> StoreResult<bool>;
}

/// The admin API's reads and writes of cards beyond [`CardStore`].
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait CardAdminStore: Send + Sync {
    /// Live cards matching the query, by id.
    async fn search(&self, query: &CardQuery, page: Page) -> StoreResult<Paged<Card>>;
    /// Ids of live cards matching the query, by id after `after` (keyset), at most `limit`.
    async fn search_ids(
        &self,
        query: &CardQuery,
        after: Option<CardId>,
        limit: u32,
    ) -> StoreResult<Vec<CardId>>;
    /// Which of these ICCIDs belong to live cards already.
    async fn existing_iccids(&self, iccids: &[String]) -> StoreResult<Vec<String>>;
    /// Live polling-enabled cards (own flag and device's) grouped by the fields config matching
    /// reads: one `GROUP BY`, for a config dry run.
    async fn match_groups(&self) -> StoreResult<Vec<MatchGroup>>;
}

/// The audit of writes through the admin API: `tb_admin_audit_log`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait AdminAuditStore: Send + Sync {
    async fn append(&self, entry: &NewAdminAudit) -> StoreResult<AdminAudit>;
    /// Newest first.
    async fn list(&self, page: Page) -> StoreResult<Paged<AdminAudit>>;
}
