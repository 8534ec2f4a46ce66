//! [`PollingLifecycleService`]: `docs/rules.md`, "Lifecycle".

use crate::LifecycleError;
use chrono::{DateTime, Utc};
use domain::store::{CardStore, DeviceStore};
use domain::{Card, CardId, Clock, DeviceId, TaskType};
use polling_config::{ConfigSnapshot, PollingConfigManager};
use polling_queue::{CardCache, PollingQueueManager};
use std::collections::HashMap;
use std::sync::Arc;

/// Cards handled per round of store reads and queue writes in a batch event.
const BATCH: usize = 10_000;

/// What an event did to the cards it was given.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Cards taken out of every queue.
    pub removed: usize,
    /// Cards put back, score now, in each queue their matched config schedules.
    pub enqueued: usize,
    /// Cards left out because their own or their device's `enable_polling` is false.
    pub skipped: usize,
    /// Cards no enabled config matches: not polled.
    pub unmatched: usize,
    /// Ids that are not live cards (unknown or soft-deleted): removed, nothing else.
    pub missing: usize,
}

impl Outcome {
    fn add(&mut self, o: Outcome) {
        self.removed += o.removed;
        self.enqueued += o.enqueued;
        self.skipped += o.skipped;
        self.unmatched += o.unmatched;
        self.missing += o.missing;
    }
}

/// Card lifecycle events -> queue changes. Needs the stores, Redis and the config cache; no
/// scheduler. Cheap to clone.
#[derive(Clone)]
pub struct PollingLifecycleService {
    pub(crate) cards: Arc<dyn CardStore>,
    pub(crate) devices: Arc<dyn DeviceStore>,
    pub(crate) queue: PollingQueueManager,
    pub(crate) configs: PollingConfigManager,
    pub(crate) clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for PollingLifecycleService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollingLifecycleService")
            .finish_non_exhaustive()
    }
}

impl PollingLifecycleService {
    pub fn new(
        cards: Arc<dyn CardStore>,
        devices: Arc<dyn DeviceStore>,
        queue: PollingQueueManager,
        configs: PollingConfigManager,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            cards,
            devices,
            queue,
            configs,
            clock,
        }
    }

    /// A card was created: remove, then enqueue if its flags allow.
    pub async fn on_card_created(&self, card: CardId) -> Result<Outcome, LifecycleError> {
        self.reschedule(&[card]).await
    }

    /// Many cards were created (import): a handful of round trips per 10,000 cards.
    pub async fn on_batch_cards_created(
        &self,
        cards: &[CardId],
    ) -> Result<Outcome, LifecycleError> {
        self.reschedule(cards).await
    }

    /// The card's status changed: its matched config may have changed too.
    pub async fn on_card_status_changed(&self, card: CardId) -> Result<Outcome, LifecycleError> {
        self.reschedule(&[card]).await
    }

    /// The card's polling was switched on.
    pub async fn on_card_enabled(&self, card: CardId) -> Result<Outcome, LifecycleError> {
        self.reschedule(&[card]).await
    }

    /// The card's polling was switched off: out of every queue, no flag read.
    pub async fn on_card_disabled(&self, card: CardId) -> Result<(), LifecycleError> {
        self.queue.remove_from_all_queues(card).await?;
        Ok(self.cache().invalidate(card).await?)
    }

    /// The card was deleted: out of every queue and out of the card cache, no flag read.
    pub async fn on_card_deleted(&self, card: CardId) -> Result<(), LifecycleError> {
        Ok(self.queue.on_card_deleted(card).await?)
    }

    /// The device's polling switch was flipped: every bound card is enabled (re-checked and
    /// enqueued) or disabled (removed). An unknown device has no cards to change.
    pub async fn on_device_polling_changed(
        &self,
        device: DeviceId,
    ) -> Result<Outcome, LifecycleError> {
        let Some(found) = self.devices.get(device).await? else {
            return Ok(Outcome::default());
        };
        let cards = self.cards.ids_of_devices(&[device]).await?;
        if found.enable_polling {
            return self.reschedule(&cards).await;
        }
        for chunk in cards.chunks(BATCH) {
            self.queue.remove_many_from_all_queues(chunk).await?;
            self.cache().invalidate_many(chunk).await?;
        }
        Ok(Outcome {
            removed: cards.len(),
            ..Outcome::default()
        })
    }

    /// The card snapshots the poll handlers cache (`polling:card:{id}`): every event below
    /// follows a change of the card outside polling, so the snapshot is dropped with it.
    fn cache(&self) -> CardCache {
        self.queue.card_cache()
    }

    async fn reschedule(&self, cards: &[CardId]) -> Result<Outcome, LifecycleError> {
        let mut total = Outcome::default();
        for chunk in cards.chunks(BATCH) {
            self.cache().invalidate_many(chunk).await?;
            total.add(self.reschedule_chunk(chunk).await?);
        }
        Ok(total)
    }

    /// Remove from all four queues, read cards and device flags (two queries), then one
    /// pipelined ZADD per task type (concurrently).
    async fn reschedule_chunk(&self, ids: &[CardId]) -> Result<Outcome, LifecycleError> {
        self.queue.remove_many_from_all_queues(ids).await?;
        let cards = self.cards.get_many(ids).await?;
        let flags = self.device_flags(&cards).await?;
        let mut out = Outcome {
            removed: ids.len(),
            missing: ids.len().saturating_sub(cards.len()),
            ..Outcome::default()
        };
        let (snapshot, now) = (self.configs.snapshot(), self.clock.now());
        let mut per_task: [Vec<(CardId, DateTime<Utc>)>; 4] = Default::default();
        for card in &cards {
            if !allowed(card, &flags) {
                out.skipped += 1;
            } else if enqueue(card, &snapshot, now, &mut per_task) {
                out.enqueued += 1;
            } else {
                out.unmatched += 1;
            }
        }
        let writes = TaskType::ALL.map(|t| self.queue.requeue_many(t, &per_task[t.index()]));
        futures::future::try_join_all(writes).await?;
        Ok(out)
    }

    /// `enable_polling` of the devices of the cards that are themselves enabled (one query).
    async fn device_flags(
        &self,
        cards: &[Card],
    ) -> Result<HashMap<DeviceId, bool>, LifecycleError> {
        let mut devices: Vec<DeviceId> = cards
            .iter()
            .filter(|c| c.facts.enable_polling)
            .filter_map(|c| c.facts.device_id)
            .collect();
        if devices.is_empty() {
            return Ok(HashMap::new());
        }
        devices.sort_unstable();
        devices.dedup();
        Ok(self.devices.enable_polling_of(&devices).await?)
    }
}

/// [`Card::polling_allowed`] with the device flags read for the batch (a device row that is
/// gone does not block: the card is unbound with it). Logs why a card is skipped.
fn allowed(card: &Card, device_flags: &HashMap<DeviceId, bool>) -> bool {
    let device_flag = card
        .facts
        .device_id
        .and_then(|d| device_flags.get(&d).copied());
    if card.polling_allowed(device_flag) {
        return true;
    }
    let card_id = card.id.get();
    match card.facts.device_id {
        Some(device) if card.facts.enable_polling => {
            let device_id = device.get();
            tracing::debug!(
                device_id,
                card_id,
                "设备轮询已禁用，跳过重新入队 (device polling disabled: card not queued)"
            );
        }
        _ => tracing::debug!(
            card_id,
            "卡轮询已禁用，跳过入队 (card polling disabled: not queued)"
        ),
    }
    false
}

/// Adds the card to each type its matched config schedules; `false` when nothing matches.
fn enqueue(
    card: &Card,
    snapshot: &ConfigSnapshot,
    now: DateTime<Utc>,
    per_task: &mut [Vec<(CardId, DateTime<Utc>)>; 4],
) -> bool {
    let Some(matched) = snapshot.match_config(&card.match_fields()) else {
        tracing::debug!(
            card_id = card.id.get(),
            "no polling config matches the card; not polled"
        );
        return false;
    };
    for (task, _) in matched.scheduled() {
        per_task[task.index()].push((card.id, now));
    }
    true
}
