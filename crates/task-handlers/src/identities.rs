//! The card identities of many concurrent polls, read together: one pipeline of cache reads
//! (`GETEX`, sliding TTL) for every card a burst of polls asks about, one store read of the
//! cards the cache did not hold (with their devices' switches), one pipeline filling the
//! cache. Each poll still asks for its own card and gets its own answer (see `batch`).

use crate::BatchedReadError;
use batch::Batcher;
use domain::store::CardStore;
use domain::{CardId, CardIdentity};
use polling_queue::CardCache;
use std::collections::HashMap;
use std::sync::Arc;
use tracing::warn;

/// The most cards one read carries.
const MAX_BATCH: usize = 1_000;

/// One card's answer: its identity, `None` when it does not exist (or is deleted), or why the
/// store could not be read.
pub(crate) type IdentityAnswer = Result<Option<CardIdentity>, BatchedReadError>;

/// Reads card identities in batches; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct IdentityLoader {
    batcher: Batcher<CardId, IdentityAnswer>,
}

impl IdentityLoader {
    pub(crate) fn new(cache: CardCache, cards: Arc<dyn CardStore>) -> Self {
        let batcher = Batcher::new("card identities", MAX_BATCH, move |ids: Vec<CardId>| {
            let (cache, cards) = (cache.clone(), cards.clone());
            async move { load(&cache, cards.as_ref(), &ids).await }
        });
        Self { batcher }
    }

    pub(crate) async fn get(&self, card: CardId) -> IdentityAnswer {
        self.batcher
            .submit(card)
            .await
            .map_err(BatchedReadError::Closed)?
    }
}

async fn load(cache: &CardCache, cards: &dyn CardStore, ids: &[CardId]) -> Vec<IdentityAnswer> {
    let cached = match cache.get_many(ids).await {
        Ok(cached) => cached,
        // Redis trouble must not stop polling: the store has the truth.
        Err(error) => {
            warn!(cards = ids.len(), %error, "card cache unreadable; reading the store");
            vec![None; ids.len()]
        }
    };
    let mut misses: Vec<CardId> = ids
        .iter()
        .zip(&cached)
        .filter(|(_, hit)| hit.is_none())
        .map(|(id, _)| *id)
        .collect();
    if misses.is_empty() {
        return cached.into_iter().map(Ok).collect();
    }
    misses.sort_unstable();
    misses.dedup();
    let read = match read_store(cards, &misses).await {
        Ok(read) => read,
        Err(error) => {
            return cached
                .into_iter()
                .map(|hit| match hit {
                    Some(identity) => Ok(Some(identity)),
                    None => Err(error.clone()),
                })
                .collect();
        }
    };
    let fill: Vec<CardIdentity> = read.values().cloned().collect();
    if let Err(error) = cache.set_many(&fill).await {
        // A later poll reads the store again; nothing stale can be cached by a failed write.
        warn!(cards = fill.len(), %error, "cannot fill the card cache");
    }
    ids.iter()
        .zip(cached)
        .map(|(id, hit)| Ok(hit.or_else(|| read.get(id).cloned())))
        .collect()
}

/// The identities of the live cards among `ids`, with their devices' switches (one statement).
async fn read_store(
    cards: &dyn CardStore,
    ids: &[CardId],
) -> Result<HashMap<CardId, CardIdentity>, BatchedReadError> {
    Ok(cards
        .facts_of(ids, false)
        .await?
        .into_iter()
        .map(|facts| (facts.card.id, facts.card.identity(facts.device_polling)))
        .collect())
}
