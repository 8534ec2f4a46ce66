//! The store traits: the only way library crates reach PostgreSQL. One trait per aggregate;
//! `store` implements them over sea-orm, tests mock them with `mockall` (feature `mock`).
//!
//! Reads of a card by id ignore soft-deleted rows. Writes that span tables (usage + deduction,
//! state change + audit row) are one transaction behind one method, so no caller can half-apply
//! them.

pub use crate::admin_stores::{
    AdminAuditStore, AlertStore, ApiKeyStore, CardAdminStore, CarrierStore, CleanupStore,
    ManualTriggerLogStore,
};
#[cfg(any(test, feature = "mock"))]
pub use crate::admin_stores::{
    MockAdminAuditStore, MockAlertStore, MockApiKeyStore, MockCardAdminStore, MockCarrierStore,
    MockCleanupStore, MockManualTriggerLogStore,
};
pub use crate::ops::{MetricsHistoryStore, MonitoringStore, UsageHistoryStore};
#[cfg(any(test, feature = "mock"))]
pub use crate::ops::{MockMetricsHistoryStore, MockMonitoringStore, MockUsageHistoryStore};
pub use crate::stream::CarrierStreamStore;
#[cfg(any(test, feature = "mock"))]
pub use crate::stream::MockCarrierStreamStore;
pub use crate::sync::CarrierSyncStore;
#[cfg(any(test, feature = "mock"))]
pub use crate::sync::MockCarrierSyncStore;
use crate::{
    Card, CardFilter, CardId, CardMatchFields, CardStateLog, CarrierPackage, DeductionStep, Device,
    DeviceId, GatewayOutcome, Megabytes, MonthUsage, NewCard, NewCardStateLog, NewDevice,
    NewPackage, NewPackageUsage, Package, PackageId, PackageOwner, PackageUsage, PollingConfig,
    PollingConfigId, PollingConfigInput, RealNameStatus, StopReason, StoreError, UsageUpdate,
};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub type StoreResult<T> = Result<T, StoreError>;

/// What [`CardStore::record_usage`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRecorded {
    /// The month arithmetic applied, computed from the database row's baseline while the row
    /// was locked (never from a caller's copy). `None`: the report changed nothing.
    pub update: Option<UsageUpdate>,
    /// The card as it is after the write.
    pub card: Card,
    /// The carrier was asked before the counters were last written (a race lost to another
    /// poll of the card): nothing was applied, the newer poll counted it.
    pub stale: bool,
    pub steps: Vec<DeductionStep>,
    /// The owner's valid packages after the deduction, in deduction order; `None` when no
    /// deduction was needed (no positive delta) and so none were read.
    pub valid_packages: Option<Vec<PackageUsage>>,
}

/// What [`CardStore::set_real_name`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct RealNameWrite {
    /// The status differed and was written.
    pub changed: bool,
    /// The card after the write.
    pub card: Card,
}

/// What [`CardStore::append_state_if`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateWrite {
    /// The row is appended; its id.
    Written(i64),
    /// No live card.
    Gone,
    /// The card's network status or stop reason is no longer the one the caller decided on.
    Changed,
    /// Another stop or start of the card is in flight (a `pending` row).
    InFlight,
}

/// What [`CardStore::close_intent`] did.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one short-lived value per stop or start, the card moved, not copied"
)]
pub enum IntentClose {
    /// The row was no longer in a state the outcome may close (already closed, or gone).
    Unchanged,
    /// The row took the outcome; the card was left as it is (a refusal, an interruption, or a
    /// yes overtaken by a later word of the carrier).
    Closed,
    /// The row became `ok` and the card followed it in the same transaction: the card as
    /// written, for whoever aligns its queues (no second read).
    Followed(Card),
}

/// A page request: `page` from 1, `page_size` 1..=500.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    pub page: u32,
    pub page_size: u32,
}

impl Page {
    pub const MAX_SIZE: u32 = 500;

    pub fn new(page: u32, page_size: u32) -> Self {
        Page {
            page: page.max(1),
            page_size: page_size.clamp(1, Self::MAX_SIZE),
        }
    }

    pub fn offset(&self) -> u64 {
        u64::from(self.page.saturating_sub(1)) * u64::from(self.page_size)
    }
}

impl Default for Page {
    fn default() -> Self {
        Page {
            page: 1,
            page_size: 20,
        }
    }
}

/// One page of a list.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paged<T> {
    pub items: Vec<T>,
    pub total: u64,
    pub page: u32,
    pub page_size: u32,
}

/// A card as a poll starts from it (see [`CardStore::facts_of`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CardFacts {
    pub card: Card,
    /// The polling switch of the card's device; `None`: standalone, or the device row is gone.
    pub device_polling: Option<bool>,
    /// The packages covering the card (its device's when bound, else its own), by id; empty
    /// when not asked for.
    pub packages: Vec<PackageUsage>,
}

impl CardFacts {
    /// Whether the card may be polled: its own switch and its device's.
    pub fn polling_enabled(&self) -> bool {
        self.card.polling_allowed(self.device_polling)
    }
}

/// Cards: `tb_iot_card`, with its audit table `tb_card_state_log` and usage history
/// `tb_data_usage_record`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait CardStore: Send + Sync {
    async fn get(&self, id: CardId) -> StoreResult<Option<Card>>;
    async fn get_many(&self, ids: &[CardId]) -> StoreResult<Vec<Card>>;
    /// What the polls of `ids` start from, in one statement: each live card among them (by
    /// id), its device's polling switch, and with `packages` every package covering it.
    async fn facts_of(&self, ids: &[CardId], packages: bool) -> StoreResult<Vec<CardFacts>>;
    async fn insert(&self, card: &NewCard) -> StoreResult<Card>;
    /// Inserts many cards in one statement per chunk (100,000 rows take about a second);
    /// returns their ids in input order. All or nothing.
    async fn insert_bulk(&self, cards: &[NewCard]) -> StoreResult<Vec<CardId>>;
    async fn list(&self, filter: &CardFilter, page: Page) -> StoreResult<Paged<Card>>;
    /// Ids of live cards matching the filter, by id after `after` (keyset), at most `limit`.
    async fn list_ids(
        &self,
        filter: &CardFilter,
        after: Option<CardId>,
        limit: u32,
    ) -> StoreResult<Vec<CardId>>;
    /// Keyset page of cards whose polling is enabled on the card and on its device (if any),
    /// ordered by id, strictly after `after`. Never OFFSET.
    async fn page_polling_enabled(
        &self,
        after: Option<CardId>,
        limit: u32,
    ) -> StoreResult<Vec<CardMatchFields>>;
    /// Live cards bound to any of these devices.
    async fn ids_of_devices(&self, devices: &[DeviceId]) -> StoreResult<Vec<CardId>>;
    async fn count(&self) -> StoreResult<u64>;
    async fn count_polling_enabled(&self) -> StoreResult<u64>;
    /// Those of `ids` that [`page_polling_enabled`](Self::page_polling_enabled) would yield
    /// (live, polling enabled on the card and its device), in any order.
    async fn polling_enabled_among(&self, ids: &[CardId]) -> StoreResult<Vec<CardId>>;

    /// Writes the real-name status if it differs (compare-and-set in the statement); returns
    /// whether it changed and the card as it is after the write. `None`: no live card.
    async fn set_real_name(
        &self,
        id: CardId,
        status: RealNameStatus,
    ) -> StoreResult<Option<RealNameWrite>>;
    async fn set_enable_polling(&self, id: CardId, enabled: bool) -> StoreResult<Card>;
    async fn set_status(&self, id: CardId, status: i16) -> StoreResult<Card>;
    /// Binds the card to a device, or unbinds it (`None`).
    async fn set_device(&self, id: CardId, device: Option<DeviceId>) -> StoreResult<Card>;
    /// Soft-deletes; returns whether a live card was deleted.
    async fn soft_delete(&self, id: CardId) -> StoreResult<bool>;

    /// Applies a stop, start or reason change and appends its audit row, in one transaction:
    /// `network_status = to_status`, `stop_reason = entry.stop_reason`.
    async fn record_state_change(&self, entry: &NewCardStateLog) -> StoreResult<()>;
    /// The compare-and-set of stop/resume, in one transaction: locks the live card row and,
    /// if its network status is `entry.from_status`, its stop reason `from_reason` and no row
    /// of the card is `pending`, appends `entry`. A `pending` entry is an intent (the card is
    /// left alone until [`close_intent`](Self::close_intent)); a `not_called` or `ok` one is
    /// applied to the card at once, as [`record_state_change`](Self::record_state_change)
    /// does. The partial unique index `uq_card_state_log_pending` holds "one intent per
    /// card" whatever the callers do.
    async fn append_state_if(
        &self,
        entry: &NewCardStateLog,
        from_reason: Option<StopReason>,
    ) -> StoreResult<StateWrite>;
    /// Ends the intent `row` of [`append_state_if`](Self::append_state_if). `Ok`: the row
    /// becomes `ok` (also from `interrupted`: the carrier did say yes) and, in the same
    /// transaction, the card takes the row's `to_status` and stop reason unless a later row
    /// of the card was written meanwhile. `Failed` or `Interrupted`: only a row still
    /// `pending` changes, the card is left alone. Says whether the row changed and, when the
    /// card followed it, returns the card as written.
    async fn close_intent(&self, row: i64, outcome: GatewayOutcome) -> StoreResult<IntentClose>;
    /// [`close_intent`](Self::close_intent) that also says, in the row's `trigger`
    /// (`{trigger}:{note}`, cut at the column's 64 characters), how the outcome was learnt:
    /// `already_at_carrier` (the carrier refused the change and a status read showed the card
    /// already as wanted), `refused` (a refusal the adapter did not understand, the card not as
    /// wanted). The default ignores the note.
    async fn close_intent_noted(
        &self,
        row: i64,
        outcome: GatewayOutcome,
        note: &'static str,
    ) -> StoreResult<IntentClose> {
        let _ = note;
        self.close_intent(row, outcome).await
    }
    /// Intents of the card whose holder is gone: every `pending` row older than `older_than`
    /// (by the database's clock) becomes `interrupted`. Returns how many.
    async fn interrupt_stale_intents(
        &self,
        id: CardId,
        older_than: std::time::Duration,
    ) -> StoreResult<u64>;
    async fn state_log(&self, id: CardId, page: Page) -> StoreResult<Paged<CardStateLog>>;

    /// One usage poll, in one transaction. The card row is locked first and the carrier's
    /// report is applied to *its* counters (`apply_month_total`): the baseline is the
    /// database's at write time, so polls of the same card that overlap, however slow their
    /// carrier calls, each count only what the previous one did not. A report the carrier
    /// was asked for (`asked_at`) before the counters were last written lost a race with that
    /// write: it is stale and changes nothing (else an older answer could pass for a carrier
    /// correction and lower the baseline); the next poll counts it. `now` is when the counters
    /// are written; both come from one clock, strictly increasing per process. Then the
    /// month counters
    /// and lifetime usage, a `tb_data_usage_record` row (when the delta is positive or the
    /// month rolled over) and the deduction of the delta from the valid packages covering the
    /// card as the locked row binds it (`docs/rules.md`, "Month rollover"). Returns what was
    /// applied, the card after the write, the deduction steps and, when the deduction read them,
    /// the owner's valid packages after it (so the caller can consult the decision table without
    /// reading again). `None`: no live card.
    async fn record_usage(
        &self,
        id: CardId,
        reported: &MonthUsage,
        asked_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> StoreResult<Option<UsageRecorded>>;
}

/// Devices: `tb_device`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait DeviceStore: Send + Sync {
    async fn get(&self, id: DeviceId) -> StoreResult<Option<Device>>;
    async fn insert(&self, device: &NewDevice) -> StoreResult<Device>;
    /// Inserts many devices; returns their ids in input order.
    async fn insert_bulk(&self, devices: &[NewDevice]) -> StoreResult<Vec<DeviceId>>;
    /// `enable_polling` of each live device among `ids` (missing ids are absent).
    async fn enable_polling_of(&self, ids: &[DeviceId]) -> StoreResult<HashMap<DeviceId, bool>>;
    async fn set_enable_polling(&self, id: DeviceId, enabled: bool) -> StoreResult<Device>;
    /// Soft-deletes the device and unbinds its cards, in one transaction.
    async fn soft_delete(&self, id: DeviceId) -> StoreResult<bool>;
}

/// Packages: products (`tb_package`) and bought packages (`tb_package_usage`).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait PackageStore: Send + Sync {
    async fn create_package(&self, package: &NewPackage) -> StoreResult<Package>;
    async fn get_package(&self, id: PackageId) -> StoreResult<Option<Package>>;
    async fn create_usage(&self, usage: &NewPackageUsage) -> StoreResult<PackageUsage>;
    /// Inserts many bought packages in one statement per chunk.
    async fn create_usages_bulk(&self, usages: &[NewPackageUsage]) -> StoreResult<u64>;
    /// Every bought package of the owner, any status.
    async fn usages_of(&self, owner: PackageOwner) -> StoreResult<Vec<PackageUsage>>;
    /// [`usages_of`](Self::usages_of) of many owners at once (the covering packages of the
    /// cards of concurrent polls); an owner without packages has no entry. The default asks
    /// one owner at a time; a store overrides it with one read.
    async fn usages_of_many(
        &self,
        owners: &[PackageOwner],
    ) -> StoreResult<std::collections::HashMap<PackageOwner, Vec<PackageUsage>>> {
        let mut found = std::collections::HashMap::with_capacity(owners.len());
        for &owner in owners {
            let usages = self.usages_of(owner).await?;
            if !usages.is_empty() {
                found.insert(owner, usages);
            }
        }
        Ok(found)
    }
    /// Deducts real megabytes from the owner's valid packages (`docs/rules.md`,
    /// "Usage deduction"), one transaction.
    async fn deduct_data_usage(
        &self,
        owner: PackageOwner,
        delta_real_mb: Megabytes,
        now: DateTime<Utc>,
    ) -> StoreResult<Vec<DeductionStep>>;
    /// Writes the carrier's view of the owner's packages, matched by `external_id` (insert
    /// the unknown ones, rewrite only those that differ). Returns the number of rows written.
    /// The PostgreSQL store group-commits concurrent calls (`store/src/batch/package.rs`).
    async fn upsert_carrier_packages(
        &self,
        owner: PackageOwner,
        packages: &[CarrierPackage],
    ) -> StoreResult<u64>;
    /// First real-name: the owner's `pending` packages with `activate_on_realname` become
    /// active from `now`; their expiry and first monthly reset fall on the calendar of `tz`
    /// (`CMP_TIMEZONE`). Returns how many.
    async fn activate_on_realname(
        &self,
        owner: PackageOwner,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> StoreResult<u64>;
    /// Expiry and activation, one bounded batch in its own transaction: at most `limit`
    /// active packages with `expires_at <= now` become expired; each owner then left without
    /// a valid package gets its next `pending` package (purchase order, not waiting for
    /// real-name) activated from `now` on the calendar of `tz`. `rows` < `limit`: nothing
    /// more is due.
    async fn expire_and_activate(
        &self,
        now: DateTime<Utc>,
        tz: Tz,
        limit: u32,
    ) -> StoreResult<PackageBatch>;
    /// Monthly reset, one bounded batch in its own transaction: at most `limit` due packages
    /// get `used_mb = 0` and `next_reset_at` = the first boundary after `now` anchored on the
    /// package's reset day in `tz` (`domain::calendar::next_monthly_reset`). `rows` < `limit`:
    /// nothing more is due.
    async fn reset_monthly(
        &self,
        now: DateTime<Utc>,
        tz: Tz,
        limit: u32,
    ) -> StoreResult<PackageBatch>;
}

/// What one batch of a package job changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackageBatch {
    /// Packages the batch changed (expired, or reset); compare with the limit to know if more
    /// are due.
    pub rows: u64,
    /// The cards and devices whose packages changed, each once.
    pub owners: Vec<PackageOwner>,
}

/// Polling configs: `tb_polling_config`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait PollingConfigStore: Send + Sync {
    /// Every config, enabled or not.
    async fn list_all(&self) -> StoreResult<Vec<PollingConfig>>;
    async fn get(&self, id: PollingConfigId) -> StoreResult<Option<PollingConfig>>;
    async fn insert(&self, input: &PollingConfigInput) -> StoreResult<PollingConfig>;
    async fn update(
        &self,
        id: PollingConfigId,
        input: &PollingConfigInput,
    ) -> StoreResult<PollingConfig>;
    async fn delete(&self, id: PollingConfigId) -> StoreResult<bool>;
    async fn set_enabled(&self, id: PollingConfigId, enabled: bool) -> StoreResult<PollingConfig>;
}
