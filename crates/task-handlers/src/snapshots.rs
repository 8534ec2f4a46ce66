//! What the real-name, package and protect polls decide from, read together across concurrent
//! polls: one store read of the cards, one of their covering packages, and one pipeline of the
//! devices' protect keys. Each poll still asks for its own card and gets its own answer (see `batch`).
//!
//! These reads are a preview: the poll applies the decision table (or the protect check) to
//! them and only takes the card's lock and reads again (`stop-resume`) when the table asks
//! for an action. A change made after the preview's read is left to whoever made it (the
//! writer of a fact evaluates the card) or to the next poll, exactly as a change made after a
//! locked read is.

use crate::{BatchedReadError, HandlerError, PollingBase};
use batch::Batcher;
use domain::store::{CardStore, PackageStore};
use domain::{Card, CardId, DeviceId, PackageOwner, PackageUsage};
use polling_queue::{ProtectKeys, ProtectState};
use std::collections::HashMap;
use std::sync::Arc;

/// The most cards (devices) one read carries.
const MAX_BATCH: usize = 1_000;

/// A card and every package that covers it (its device's when bound, else its own).
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) card: Card,
    pub(crate) packages: Vec<PackageUsage>,
}

/// One card's answer: `None` when it does not exist (or is deleted), or why the store could not
/// be read.
pub(crate) type SnapshotAnswer = Result<Option<Snapshot>, BatchedReadError>;

/// Reads cards with their packages, and devices' protect states, in batches; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct SnapshotLoader {
    cards: Batcher<CardId, SnapshotAnswer>,
    cards_only: Batcher<CardId, CardAnswer>,
    protect: Batcher<DeviceId, Result<ProtectState, BatchedReadError>>,
}

/// One card as the store holds it: `None` when it does not exist (or is deleted).
pub(crate) type CardAnswer = Result<Option<Card>, BatchedReadError>;

impl SnapshotLoader {
    pub(crate) fn new(
        cards: Arc<dyn CardStore>,
        packages: Arc<dyn PackageStore>,
        protect: ProtectKeys,
    ) -> Self {
        let card_only_reader = {
            let cards = cards.clone();
            Batcher::new("cards", MAX_BATCH, move |ids: Vec<CardId>| {
                let cards = cards.clone();
                async move { load_cards(cards.as_ref(), &ids).await }
            })
        };
        let card_reader = Batcher::new("card snapshots", MAX_BATCH, move |ids: Vec<CardId>| {
            let (cards, packages) = (cards.clone(), packages.clone());
            async move { load(cards.as_ref(), packages.as_ref(), &ids).await }
        });
        let protect_reader = Batcher::new(
            "protect states",
            MAX_BATCH,
            move |devices: Vec<DeviceId>| {
                let protect = protect.clone();
                async move {
                    match protect.protect_states(&devices).await {
                        Ok(states) => states.into_iter().map(Ok).collect(),
                        Err(error) => {
                            let error = BatchedReadError::from(error);
                            devices.iter().map(|_| Err(error.clone())).collect()
                        }
                    }
                }
            },
        );
        Self {
            cards: card_reader,
            cards_only: card_only_reader,
            protect: protect_reader,
        }
    }

    /// The card alone, without its packages.
    pub(crate) async fn card(&self, card: CardId) -> CardAnswer {
        self.cards_only
            .submit(card)
            .await
            .map_err(BatchedReadError::Closed)?
    }

    pub(crate) async fn snapshot(&self, card: CardId) -> SnapshotAnswer {
        self.cards
            .submit(card)
            .await
            .map_err(BatchedReadError::Closed)?
    }

    pub(crate) async fn protect_state(
        &self,
        device: DeviceId,
    ) -> Result<ProtectState, BatchedReadError> {
        self.protect
            .submit(device)
            .await
            .map_err(BatchedReadError::Closed)?
    }
}

/// The readers as the handlers call them: each answer carries the handler's error type.
impl PollingBase {
    /// The card and its covering packages as the store holds them now, read together with
    /// those of concurrent polls. `None`: the card does not exist or is deleted.
    pub(crate) async fn snapshot(&self, card_id: CardId) -> Result<Option<Snapshot>, HandlerError> {
        self.snapshots
            .snapshot(card_id)
            .await
            .map_err(HandlerError::BatchedRead)
    }

    /// The card as the store holds it now (no packages), read together with those of
    /// concurrent polls. `None`: the card does not exist or is deleted.
    pub(crate) async fn card_now(&self, card_id: CardId) -> Result<Option<Card>, HandlerError> {
        self.snapshots
            .card(card_id)
            .await
            .map_err(HandlerError::BatchedRead)
    }

    /// The device's protect periods, read together with those of concurrent polls.
    pub(crate) async fn protect_state(
        &self,
        device: DeviceId,
    ) -> Result<ProtectState, HandlerError> {
        self.snapshots
            .protect_state(device)
            .await
            .map_err(HandlerError::BatchedRead)
    }
}

async fn load_cards(cards: &dyn CardStore, ids: &[CardId]) -> Vec<CardAnswer> {
    match live_cards(cards, ids).await {
        Ok(found) => ids.iter().map(|id| Ok(found.get(id).cloned())).collect(),
        Err(error) => ids.iter().map(|_| Err(error.clone())).collect(),
    }
}

/// The live (not deleted) cards among `ids`, each read once.
async fn live_cards(
    cards: &dyn CardStore,
    ids: &[CardId],
) -> Result<HashMap<CardId, Card>, BatchedReadError> {
    let mut unique = ids.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let rows = cards.get_many(&unique).await?;
    Ok(rows
        .into_iter()
        .filter(|card| card.deleted_at.is_none())
        .map(|card| (card.id, card))
        .collect())
}

async fn load(
    cards: &dyn CardStore,
    packages: &dyn PackageStore,
    ids: &[CardId],
) -> Vec<SnapshotAnswer> {
    match read(cards, packages, ids).await {
        Ok((found, covering)) => ids
            .iter()
            .map(|id| {
                Ok(found.get(id).map(|card| Snapshot {
                    packages: covering
                        .get(&PackageOwner::covering(card.id, card.device_id))
                        .cloned()
                        .unwrap_or_default(),
                    card: card.clone(),
                }))
            })
            .collect(),
        Err(error) => ids.iter().map(|_| Err(error.clone())).collect(),
    }
}

/// The live cards of a batch, and the packages of their covering owners.
type Read = (
    HashMap<CardId, Card>,
    HashMap<PackageOwner, Vec<PackageUsage>>,
);

/// The live cards among `ids`, and the packages of their covering owners.
async fn read(
    cards: &dyn CardStore,
    packages: &dyn PackageStore,
    ids: &[CardId],
) -> Result<Read, BatchedReadError> {
    let found = live_cards(cards, ids).await?;
    let mut owners: Vec<PackageOwner> = found
        .values()
        .map(|card| PackageOwner::covering(card.id, card.device_id))
        .collect();
    owners.sort_unstable_by_key(|owner| match owner {
        PackageOwner::Card(c) => (0, c.get()),
        PackageOwner::Device(d) => (1, d.get()),
    });
    owners.dedup();
    let covering = if owners.is_empty() {
        HashMap::new()
    } else {
        packages.usages_of_many(&owners).await?
    };
    Ok((found, covering))
}
