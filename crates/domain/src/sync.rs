//! Carrier record sync: the carrier's own list of its cards, read a page at a time (Control
//! Center's Search Devices since a watermark; 1NCE's SIM list), instead of one call per card.
//!
//! A sync round reads every page of one listing and ends by moving the carrier's watermark to
//! the instant the round started. Progress is durable (`tb_carrier_sync`): a node killed
//! mid-round leaves the next run to resume at the page after the last one whose effects were
//! written, with the same `since`, and the watermark moves only once the last page's effects
//! are written.

use crate::{Card, CarrierId, NetworkStatus, RealNameStatus};
use chrono::{DateTime, Utc};

/// What a carrier's listing covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncScope {
    /// The cards whose record changed since the round's `since` (Control Center). A card
    /// absent from the round did not change.
    ChangedSince,
    /// Every card of the account, whatever `since` (1NCE's list cannot be filtered). A card
    /// absent from the round is not known to the platform.
    Everything,
}

/// One card of a listing page, as the carrier answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncedCard {
    pub iccid: String,
    /// The carrier's network status; `None` when the status is one outside the adapter's
    /// table (that card alone is not understood).
    pub network: Option<NetworkStatus>,
    /// The real-name status the listing implies, when the protocol derives it from the record
    /// exactly as its per-card real-name query would (1NCE: a SIM the platform lists is
    /// verified); `None`: the listing says nothing about it.
    pub realname: Option<RealNameStatus>,
}

/// One page of a carrier's listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncPage {
    pub scope: SyncScope,
    pub cards: Vec<SyncedCard>,
    /// No page follows this one.
    pub last_page: bool,
}

/// Where a carrier's sync stands (`tb_carrier_sync`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncState {
    /// When the last complete round started: the next round reads the changes since then
    /// (less an overlap for the two clocks). `None`: no round completed yet.
    pub watermark: Option<DateTime<Utc>>,
    /// The round in progress: when it started and the next page to read (from 1). `None`: no
    /// round in progress.
    pub round: Option<SyncRound>,
    /// Rounds completed.
    pub rounds: i64,
    /// When the last round completed.
    pub completed_at: Option<DateTime<Utc>>,
}

/// A round in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRound {
    pub started_at: DateTime<Utc>,
    pub next_page: u32,
}

impl SyncState {
    /// A carrier never synced.
    pub const fn new() -> Self {
        Self {
            watermark: None,
            round: None,
            rounds: 0,
            completed_at: None,
        }
    }

    /// The round to read now: the one in progress, else a new one starting `now` at page 1.
    pub fn current_round(&self, now: DateTime<Utc>) -> SyncRound {
        self.round.unwrap_or(SyncRound {
            started_at: now,
            next_page: 1,
        })
    }

    /// Page `page` of `round` is written: the round goes on at the next page, or, after its
    /// last page, completes and the watermark moves to its start.
    pub fn page_written(
        &mut self,
        round: SyncRound,
        page: u32,
        last_page: bool,
        now: DateTime<Utc>,
    ) {
        if last_page {
            self.watermark = Some(round.started_at);
            self.round = None;
            self.rounds += 1;
            self.completed_at = Some(now);
        } else {
            self.round = Some(SyncRound {
                started_at: round.started_at,
                next_page: page.saturating_add(1),
            });
        }
    }
}

impl Default for SyncState {
    fn default() -> Self {
        Self::new()
    }
}

/// The sync's store: where each carrier's sync stands, and the cards a page names.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait CarrierSyncStore: Send + Sync {
    /// Where `carrier`'s sync stands; a carrier never synced is [`SyncState::new`].
    async fn sync_state(&self, carrier: CarrierId) -> crate::store::StoreResult<SyncState>;

    /// Records where `carrier`'s sync stands.
    async fn save_sync_state(
        &self,
        carrier: CarrierId,
        state: &SyncState,
        now: DateTime<Utc>,
    ) -> crate::store::StoreResult<()>;

    /// The live cards of `carrier` with these ICCIDs, as they are now (unlocked).
    async fn cards_by_iccid(
        &self,
        carrier: CarrierId,
        iccids: &[String],
    ) -> crate::store::StoreResult<Vec<Card>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(s, 0).single().expect("valid instant")
    }

    #[test]
    fn a_round_moves_the_watermark_to_its_start_only_after_its_last_page() {
        let mut state = SyncState::new();
        let round = state.current_round(at(100));
        assert_eq!(round.next_page, 1);
        state.page_written(round, 1, false, at(101));
        assert_eq!(
            state.watermark, None,
            "a page short of the last moves nothing"
        );
        let round = state.current_round(at(500));
        assert_eq!(
            round,
            SyncRound {
                started_at: at(100),
                next_page: 2
            },
            "resumed, not restarted"
        );
        state.page_written(round, 2, true, at(102));
        assert_eq!(state.watermark, Some(at(100)));
        assert_eq!(state.round, None);
        assert_eq!(state.rounds, 1);
        assert_eq!(state.current_round(at(200)).started_at, at(200));
    }
}
