//! What the real-name, package and protect polls start from, read together across concurrent
//! polls: one statement for the cards (with their devices' polling switches and, for the
//! package and protect polls, the packages covering them) and, for the protect polls, one
//! pipeline of the devices' protect keys in the same flush. The identities read refresh the
//! card cache (one pipeline a flush). Each poll still asks for its own card and gets its own answer (see `batch`).
//!
//! These reads are a preview: the poll compares the carrier's answer with them, applies the
//! decision table (or the protect check) and only writes, or takes the card's lock and reads
//! again (`stop-resume`), when something differs or the table asks for an action. A change made
//! after the preview's read is left to whoever made it (the writer of a fact evaluates the
//! card) or to the next poll, exactly as a change made after a locked read is.
//!
//! The reads linger (see [`batch::Batcher::linger`]): under load a read waits up to
//! [`READ_LINGER`] for the reads of other polls, so that a pool of polls shares one statement
//! instead of one each. A read after a quiet spell goes at once.

use crate::{BatchedReadError, HandlerError, PollingBase};
use batch::Batcher;
use domain::store::{CardFacts, CardStore};
use domain::{CardId, CardIdentity, DeviceId};
use polling_queue::{CardCache, ProtectKeys, ProtectState};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tracing::warn;

/// The most cards (devices) one read carries.
const MAX_BATCH: usize = 1_000;

/// How long, under load, a read waits for the reads of other polls.
pub(crate) const READ_LINGER: Duration = Duration::from_millis(2);

/// One card's answer: `None` when it does not exist (or is deleted), or why the store could not
/// be read.
pub(crate) type FactsAnswer = Result<Option<CardFacts>, BatchedReadError>;

/// Reads cards (with or without their packages) and devices' protect states, in batches;
/// cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct SnapshotLoader {
    with_packages: Batcher<CardId, FactsAnswer>,
    cards_only: Batcher<CardId, FactsAnswer>,
    with_protect: Batcher<CardId, ProtectAnswer>,
}

/// One protect poll's start: the card's facts with packages, and its device's protect periods
/// when the check reads them (a bound, real-named card; `None` otherwise).
pub(crate) type ProtectAnswer = Result<Option<(CardFacts, Option<ProtectState>)>, BatchedReadError>;

/// Where the cards are read from, and the cache their identities refresh.
#[derive(Clone)]
struct Store {
    cards: Arc<dyn CardStore>,
    cache: CardCache,
}

/// A batcher of [`CardStore::facts_of`].
fn facts_reader(name: &'static str, store: Store, packages: bool) -> Batcher<CardId, FactsAnswer> {
    Batcher::new(name, MAX_BATCH, move |ids: Vec<CardId>| {
        let store = store.clone();
        async move { load(&store, &ids, packages).await }
    })
    .linger(READ_LINGER)
}

impl SnapshotLoader {
    pub(crate) fn new(cards: Arc<dyn CardStore>, cache: CardCache, protect: ProtectKeys) -> Self {
        let store = Store { cards, cache };
        let protect_reader = {
            let store = store.clone();
            Batcher::new("protect snapshots", MAX_BATCH, move |ids: Vec<CardId>| {
                let (store, protect) = (store.clone(), protect.clone());
                async move { load_with_protect(&store, &protect, &ids).await }
            })
            .linger(READ_LINGER)
        };
        Self {
            with_packages: facts_reader("card snapshots", store.clone(), true),
            cards_only: facts_reader("cards", store, false),
            with_protect: protect_reader,
        }
    }

    /// The card and its device's switch, without packages.
    pub(crate) async fn card(&self, card: CardId) -> FactsAnswer {
        self.cards_only
            .submit(card)
            .await
            .map_err(BatchedReadError::Closed)?
    }

    /// The card, its device's switch and the packages covering it.
    pub(crate) async fn snapshot(&self, card: CardId) -> FactsAnswer {
        self.with_packages
            .submit(card)
            .await
            .map_err(BatchedReadError::Closed)?
    }

    /// The card, its device's switch, the packages covering it and, for a bound real-named
    /// card, its device's protect periods.
    pub(crate) async fn protect_snapshot(&self, card: CardId) -> ProtectAnswer {
        self.with_protect
            .submit(card)
            .await
            .map_err(BatchedReadError::Closed)?
    }
}

/// The readers as the handlers call them: each answer carries the handler's error type.
impl PollingBase {
    /// The card, its device's switch and its covering packages as the store holds them now,
    /// read together with those of concurrent polls. `None`: the card does not exist or is
    /// deleted.
    pub(crate) async fn snapshot(
        &self,
        card_id: CardId,
    ) -> Result<Option<CardFacts>, HandlerError> {
        self.snapshots
            .snapshot(card_id)
            .await
            .map_err(HandlerError::BatchedRead)
    }

    /// The card and its device's switch as the store holds them now (no packages), read
    /// together with those of concurrent polls. `None`: the card does not exist or is deleted.
    pub(crate) async fn card_now(
        &self,
        card_id: CardId,
    ) -> Result<Option<CardFacts>, HandlerError> {
        self.snapshots
            .card(card_id)
            .await
            .map_err(HandlerError::BatchedRead)
    }

    /// What the protect check starts from (see [`SnapshotLoader::protect_snapshot`]), read
    /// together with that of concurrent polls: one statement and one Redis pipeline.
    pub(crate) async fn protect_snapshot(
        &self,
        card_id: CardId,
    ) -> Result<Option<(CardFacts, Option<ProtectState>)>, HandlerError> {
        self.snapshots
            .protect_snapshot(card_id)
            .await
            .map_err(HandlerError::BatchedRead)
    }
}

/// The live cards among `ids` (each read once), by id. Their identities, just read, refresh
/// the card cache (one pipeline), as the usage poll's cache reads would.
async fn read(
    store: &Store,
    ids: &[CardId],
    packages: bool,
) -> Result<HashMap<CardId, CardFacts>, BatchedReadError> {
    let mut unique = ids.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let found = store.cards.facts_of(&unique, packages).await?;
    let identities: Vec<CardIdentity> = found
        .iter()
        .map(|f| f.card.identity(f.device_polling))
        .collect();
    if let Err(error) = store.cache.set_many(&identities).await {
        // The next cache read goes to the store: nothing stale is left by a failed write.
        warn!(cards = identities.len(), %error, "cannot refresh the card cache");
    }
    Ok(found.into_iter().map(|f| (f.card.id, f)).collect())
}

/// Each asked card's facts, in the order asked.
async fn load(store: &Store, ids: &[CardId], packages: bool) -> Vec<FactsAnswer> {
    match read(store, ids, packages).await {
        Ok(found) => ids.iter().map(|id| Ok(found.get(id).cloned())).collect(),
        Err(error) => ids.iter().map(|_| Err(error.clone())).collect(),
    }
}

/// The device whose protect periods the check of this card reads: a bound, real-named card's
/// (the check skips the others whatever the periods are).
fn checked_device(facts: &CardFacts) -> Option<DeviceId> {
    facts
        .card
        .facts
        .device_id
        .filter(|_| facts.card.real_name_satisfied())
}

/// Each asked card's facts with packages and, where checked, its device's protect periods.
async fn load_with_protect(
    store: &Store,
    protect: &ProtectKeys,
    ids: &[CardId],
) -> Vec<ProtectAnswer> {
    let read = async {
        let found = read(store, ids, true).await?;
        let mut devices: Vec<DeviceId> = found.values().filter_map(checked_device).collect();
        devices.sort_unstable();
        devices.dedup();
        let states = protect.protect_states(&devices).await?;
        let periods: HashMap<DeviceId, ProtectState> = devices.into_iter().zip(states).collect();
        Ok::<_, BatchedReadError>((found, periods))
    };
    match read.await {
        Ok((found, periods)) => ids
            .iter()
            .map(|id| {
                Ok(found.get(id).map(|facts| {
                    let state = checked_device(facts).and_then(|d| periods.get(&d).cloned());
                    (facts.clone(), state)
                }))
            })
            .collect(),
        Err(error) => ids.iter().map(|_| Err(error.clone())).collect(),
    }
}
