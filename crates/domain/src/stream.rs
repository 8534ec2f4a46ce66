//! Carriers' push streams (1NCE's and emnify's Data Streamer): the usage records they post, as
//! the store applies them, and what became of each.
//!
//! A record is applied once: `tb_carrier_event` keeps every record applied to a card, unique on
//! `(carrier_id, record_id)`, written in the transaction of the usage write. The counting rule
//! is [`crate::apply_streamed`] with [`crate::apply_month_total`].

use crate::{Card, CardId, CarrierId, DeductionStep, Megabytes, PackageUsage};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

/// One data usage record of a push stream, checked and converted to megabytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedUsage {
    /// The carrier's id of the record (unique per carrier; replays carry the same id).
    pub record_id: String,
    pub iccid: String,
    /// When the reported consumption ended.
    pub ended_at: DateTime<Utc>,
    /// First day of the month `ended_at` falls in, in the deployment's calendar.
    pub month: NaiveDate,
    pub megabytes: Megabytes,
}

/// What became of one record of a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamOutcome {
    /// Counted on its card (its megabytes may be 0).
    Applied,
    /// Applied before (a replay, or the same record twice in one post): nothing changed.
    Duplicate,
    /// No live card of this carrier has the record's ICCID: nothing written.
    UnknownCard,
    /// The record's month is already closed on its card: kept as received, nothing counted.
    ClosedMonth,
    /// Not a data usage record (an SMS record, a network event): nothing written.
    Ignored,
}

str_enum!(StreamOutcome {
    Applied => "applied",
    Duplicate => "duplicate",
    UnknownCard => "unknown_card",
    ClosedMonth => "closed_month",
    Ignored => "ignored",
});

/// A card whose counters a post changed, as it is after the write.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedCard {
    pub card: Card,
    /// Megabytes the post counted on the card.
    pub counted_mb: Megabytes,
    pub steps: Vec<DeductionStep>,
    /// The owner's valid packages after the deduction, in deduction order.
    pub valid_packages: Vec<PackageUsage>,
}

/// What [`CarrierStreamStore::apply_streamed_usage`] did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamWrite {
    /// One outcome per record given, in order (never `Ignored`).
    pub outcomes: Vec<StreamOutcome>,
    /// The cards whose counters changed, by id.
    pub cards: Vec<StreamedCard>,
}

impl StreamWrite {
    pub fn card_ids(&self) -> Vec<CardId> {
        self.cards.iter().map(|c| c.card.id).collect()
    }
}

/// The push streams' write: `tb_carrier_event`, and the usage write of the cards they name.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait CarrierStreamStore: Send + Sync {
    /// Applies `records` of `carrier` in one transaction: each record not applied before, of a
    /// live card of the carrier with that ICCID, is counted on the card's month counters
    /// ([`crate::apply_streamed`], on the locked row), recorded in `tb_data_usage_record`,
    /// deducted from the owner's valid packages, and kept in `tb_carrier_event`. A failure
    /// writes nothing.
    async fn apply_streamed_usage(
        &self,
        carrier: CarrierId,
        records: &[StreamedUsage],
        now: DateTime<Utc>,
    ) -> crate::store::StoreResult<StreamWrite>;
}
