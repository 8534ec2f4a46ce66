//! A fact config matching reads changed through polling or stop/resume (`docs/rules.md`,
//! "Lifecycle", second row).
//!
//! Real-name and network status change through polling itself, with no lifecycle event. When
//! one changes, the card may match another config that schedules other task types: the card is
//! aligned at once — added, due now, to each type its new config schedules that it is not in;
//! removed from each type no longer scheduled. Entries it keeps keep their scores.
//!
//! A removal is decided on facts read a moment before, and the facts that config matching
//! reads change without the card's lock (a real-name poll writes its status beside a stop or
//! a reconciliation that read the card before). So whoever removes an entry re-reads the card
//! afterwards and adds back what its facts schedule now ([`restore_wanted`]). Every writer of
//! such a fact aligns after its write, so of two racing alignments the later one reads the
//! later facts: an entry the newest facts want is never left out. An entry they do not want
//! may stay; it leaves at its next poll, when the handler finds its type no longer scheduled.

use crate::{LifecycleError, PollingLifecycleService};
use chrono::{DateTime, Utc};
use domain::store::CardStore;
use domain::{Card, CardId};
use polling_config::ConfigSnapshot;
use polling_queue::{Aligned, PollingQueueManager};

impl PollingLifecycleService {
    /// Aligns the card's queue membership with its matched config after a change of its
    /// real-name status, network status, category or carrier. A card whose own or device's
    /// polling switch is off (or that is deleted) is removed from every queue instead.
    pub async fn on_card_facts_changed(&self, card: &Card) -> Result<Aligned, LifecycleError> {
        let wanted = if self.polling_allowed(card).await? {
            self.configs
                .snapshot()
                .scheduled_types(&card.match_fields())
        } else {
            [false; 4]
        };
        let now = self.clock.now();
        let mut aligned = self.queue.align(&[(card.id, wanted)], now).await?;
        if aligned.removed > 0 {
            aligned.added += restore_wanted(
                self.cards.as_ref(),
                &self.queue,
                &self.configs.snapshot(),
                &[card.id],
                now,
            )
            .await?;
        }
        if aligned.changed() {
            tracing::debug!(
                card_id = card.id.get(),
                added = aligned.added,
                removed = aligned.removed,
                "卡状态变化重新入队: the card's queues follow its new matched config"
            );
        }
        Ok(aligned)
    }

    /// Adds the card, due now, to each type the config matching `card` schedules that it is
    /// not in (`ZADD NX`: entries it has keep their scores); removes nothing. A writer calls it
    /// with the facts it is about to write, before writing them, so that a process that dies
    /// between the write and its [`Self::on_card_facts_changed`] leaves the card in every queue
    /// the new facts schedule. Should the write not happen, an entry added here that the card's
    /// config does not schedule leaves at its next poll. Returns the entries added.
    pub async fn add_scheduled(&self, card: &Card) -> Result<u64, LifecycleError> {
        if !self.polling_allowed(card).await? {
            return Ok(0);
        }
        let wanted = self
            .configs
            .snapshot()
            .scheduled_types(&card.match_fields());
        Ok(self
            .queue
            .add_missing(&[(card.id, wanted)], self.clock.now())
            .await?)
    }

    /// The card's switch, then its device's (one read, only for a bound, enabled card).
    async fn polling_allowed(&self, card: &Card) -> Result<bool, LifecycleError> {
        if card.deleted_at.is_some() || !card.facts.enable_polling {
            return Ok(false);
        }
        let Some(device) = card.facts.device_id else {
            return Ok(true);
        };
        let flags = self.devices.enable_polling_of(&[device]).await?;
        Ok(card.polling_allowed(flags.get(&device).copied()))
    }
}

/// After entries of `ids` were removed on facts read earlier: reads the cards again and adds
/// (`ZADD NX`, due `now`) each type the config they match now schedules. Cards that are no
/// longer live or polling-enabled get nothing. Two reads (the polling switches, then the
/// cards), only ever for cards that just lost an entry. Returns the entries added.
pub(crate) async fn restore_wanted(
    cards: &dyn CardStore,
    queue: &PollingQueueManager,
    snapshot: &ConfigSnapshot,
    ids: &[CardId],
    now: DateTime<Utc>,
) -> Result<u64, LifecycleError> {
    if ids.is_empty() {
        return Ok(0);
    }
    let enabled = cards.polling_enabled_among(ids).await?;
    if enabled.is_empty() {
        return Ok(0);
    }
    let wanted: Vec<_> = cards
        .get_many(&enabled)
        .await?
        .iter()
        .map(|card| (card.id, snapshot.scheduled_types(&card.match_fields())))
        .collect();
    let added = queue.add_missing(&wanted, now).await?;
    if added > 0 {
        tracing::info!(
            cards = ids.len(),
            added,
            "queue entries removed on facts that changed meanwhile were put back"
        );
    }
    Ok(added)
}
