//! The carrier record sync: each carrier's own listing of its cards, read a page at a time
//! (Control Center's Search Devices since a watermark, 1NCE's SIM list a hundred SIMs a call),
//! answers what per-card queries would otherwise ask one card a call.
//!
//! Per page, for the live cards of the carrier it names:
//! - **Real-name, where the listing implies it** (1NCE lists only SIMs it knows, which its
//!   per-card query answers `Verified`): a card whose status is already the listed one has its
//!   real-name poll moved to one interval from now without a call (`ZADD XX GT`: never earlier,
//!   never a card that left the queue), exactly what that poll would do with the same answer.
//!   A card whose status differs, or that is verified but still stopped for `not_realname`,
//!   gets a manual real-name poll: the one exact path (compare-and-set, package activation,
//!   evaluation) writes the change.
//! - **Network status**: a carrier status other than the card's is counted
//!   (`cmp_carrier_sync_cards_total{outcome="status_differs"}`) and logged, not written: the
//!   card's network status is what the stop/start path last made it, and a change made on the
//!   carrier's portal is the operator's to reconcile (a stop or start in flight differs too for
//!   a moment).
//!
//! Durability: a page's effects are written before the page is recorded as read
//! (`tb_carrier_sync`); the watermark moves to the round's start only after its last page.
//! A node killed mid-round leaves the next run to read the unrecorded page again, with the
//! same `since`: its effects are idempotent (a postpone to the same time, a manual poll of a
//! card whose status still differs). Control Center orders the devices by modification time,
//! oldest first, so a device modified during the round moves to the end and may be skipped by
//! a page boundary; it was modified after the round's start, hence after the next round's
//! `since`, and the next round reads it.

use crate::{HandlerError, PollingDeps};
use chrono::{DateTime, TimeDelta, Utc};
use domain::periodic::{BoxError, PeriodicJob};
use domain::store::{CarrierStore, CarrierSyncStore};
use domain::{
    Card, CardId, CarrierId, NetworkStatus, RealNameStatus, StopReason, SyncPage, SyncState,
    TaskType,
};
use gateway::GatewayError;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, info, warn};

/// How far before the watermark a round reads: the carrier's clock stamps the modifications,
/// ours the watermark; a minute of changes read twice costs little.
pub const SYNC_OVERLAP: TimeDelta = TimeDelta::seconds(60);

/// How often the sync runs (on one node of the cluster).
pub const SYNC_EVERY: Duration = Duration::from_secs(60);

/// What one page did to our cards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageEffects {
    /// Listed cards that are ours.
    pub known: usize,
    /// Listed cards that are not ours (or deleted).
    pub unknown: usize,
    /// Real-name polls moved without a call.
    pub postponed: usize,
    /// Manual real-name polls asked for (the listed status differs from the card's).
    pub polled: usize,
    /// Cards whose network status differs from the carrier's.
    pub status_differs: usize,
}

/// What one run did for one carrier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncReport {
    pub pages: u32,
    pub effects: PageEffects,
    /// A round completed (the watermark moved).
    pub rounds_completed: u32,
}

/// The record sync of every enabled carrier whose protocol has a listing.
pub struct CarrierSync {
    deps: PollingDeps,
    carriers: Arc<dyn CarrierStore>,
    syncs: Arc<dyn CarrierSyncStore>,
    /// Most pages one run reads per carrier (their calls share the carrier's budget with the
    /// polls). 0: the sync is off.
    pages_per_run: u32,
}

impl CarrierSync {
    pub fn new(
        deps: PollingDeps,
        carriers: Arc<dyn CarrierStore>,
        syncs: Arc<dyn CarrierSyncStore>,
        pages_per_run: u32,
    ) -> Self {
        Self {
            deps,
            carriers,
            syncs,
            pages_per_run,
        }
    }

    /// One run over every enabled carrier; a carrier's failure does not stop the others.
    pub async fn run_once(&self) -> Result<HashMap<CarrierId, SyncReport>, HandlerError> {
        let mut reports = HashMap::new();
        if self.pages_per_run == 0 {
            return Ok(reports);
        }
        let mut failed = None;
        for account in self.carriers.all().await? {
            if !account.enabled {
                continue;
            }
            match self.sync_carrier(account.carrier_id).await {
                Ok(Some(report)) => {
                    reports.insert(account.carrier_id, report);
                }
                Ok(None) => {}
                Err(error) => {
                    warn!(carrier = %account.carrier_id, %error, "carrier sync failed; resumed at the next run");
                    metrics::counter!("cmp_carrier_sync_failures_total",
                        "carrier" => account.carrier_id.to_string())
                    .increment(1);
                    failed = Some(error);
                }
            }
        }
        match failed {
            Some(error) if reports.is_empty() => Err(error),
            _ => Ok(reports),
        }
    }

    /// Up to `pages_per_run` pages of `carrier`'s listing; `None`: its protocol has none.
    pub async fn sync_carrier(
        &self,
        carrier: CarrierId,
    ) -> Result<Option<SyncReport>, HandlerError> {
        let mut state = self.syncs.sync_state(carrier).await?;
        let mut report = SyncReport::default();
        while report.pages < self.pages_per_run {
            let now = self.deps.base.now();
            let round = state.current_round(now);
            let since = since_of(&state, round.started_at);
            let page = match self
                .deps
                .gateway
                .sync_page(carrier, since, round.next_page)
                .await
            {
                Ok(page) => page,
                Err(GatewayError::Unsupported(_)) if report.pages == 0 => return Ok(None),
                Err(error) => return Err(error.into()),
            };
            let effects = self.apply(carrier, &page).await?;
            report.pages += 1;
            report.effects.add(effects);
            state.page_written(round, round.next_page, page.last_page, self.deps.base.now());
            self.syncs
                .save_sync_state(carrier, &state, self.deps.base.now())
                .await?;
            let label = carrier.to_string();
            metrics::counter!("cmp_carrier_sync_pages_total", "carrier" => label.clone())
                .increment(1);
            if page.last_page {
                report.rounds_completed += 1;
                record_round(&label, &state);
                info!(carrier = %carrier, rounds = state.rounds, watermark = ?state.watermark,
                    "carrier sync round completed");
                break;
            }
        }
        Ok(Some(report))
    }

    /// Writes what one page says about our cards (module doc).
    async fn apply(
        &self,
        carrier: CarrierId,
        page: &SyncPage,
    ) -> Result<PageEffects, HandlerError> {
        let iccids: Vec<String> = page.cards.iter().map(|c| c.iccid.clone()).collect();
        let ours: HashMap<String, Card> = self
            .syncs
            .cards_by_iccid(carrier, &iccids)
            .await?
            .into_iter()
            .map(|card| (card.facts.iccid.clone(), card))
            .collect();
        let now = self.deps.base.now();
        let mut effects = PageEffects::default();
        let mut postpone: Vec<(CardId, DateTime<Utc>)> = Vec::new();
        let mut poll: Vec<CardId> = Vec::new();
        for listed in &page.cards {
            let Some(card) = ours.get(&listed.iccid) else {
                effects.unknown += 1;
                continue;
            };
            effects.known += 1;
            if let Some(status) = listed.realname {
                if status == card.facts.real_name_status && !resume_pending(card) {
                    if let Some(every) = self.deps.base.matched_interval(card, TaskType::Realname)
                        && let Ok(every) = TimeDelta::from_std(every)
                    {
                        postpone.push((card.id, now + every));
                    }
                } else {
                    poll.push(card.id);
                }
            }
            if let Some(network) = listed.network
                && network != card.facts.network_status
            {
                effects.status_differs += 1;
                warn!(card_id = %card.id, carrier = %carrier,
                    ours = network_word(card.facts.network_status), carrier_says = network_word(network),
                    "the carrier's network status differs from the card's; not written");
            }
        }
        self.deps
            .base
            .queue
            .postpone_many(TaskType::Realname, &postpone)
            .await?;
        self.deps
            .base
            .queue
            .enqueue_manual_many(&poll, TaskType::Realname)
            .await?;
        effects.postponed = postpone.len();
        effects.polled = poll.len();
        record_page(carrier, &effects);
        debug!(carrier = %carrier, ?effects, "carrier sync page applied");
        Ok(effects)
    }
}

impl PageEffects {
    fn add(&mut self, other: PageEffects) {
        self.known += other.known;
        self.unknown += other.unknown;
        self.postponed += other.postponed;
        self.polled += other.polled;
        self.status_differs += other.status_differs;
    }
}

/// The `since` of a round: the watermark less the overlap; a carrier's first round reads the
/// changes of the overlap before it started (its cards' facts are taken as they are).
fn since_of(state: &SyncState, round_started: DateTime<Utc>) -> DateTime<Utc> {
    state.watermark.unwrap_or(round_started) - SYNC_OVERLAP
}

/// Verified, yet still stopped for `not_realname`: the real-name poll has work to redo.
fn resume_pending(card: &Card) -> bool {
    card.facts.real_name_status == RealNameStatus::Verified
        && card.facts.network_status == NetworkStatus::Stopped
        && card.stop_reason == Some(StopReason::NotRealname)
}

fn network_word(status: NetworkStatus) -> &'static str {
    match status {
        NetworkStatus::Online => "online",
        NetworkStatus::Stopped => "stopped",
    }
}

fn record_page(carrier: CarrierId, effects: &PageEffects) {
    let label = carrier.to_string();
    for (outcome, n) in [
        ("postponed", effects.postponed),
        ("polled", effects.polled),
        ("unknown", effects.unknown),
        ("status_differs", effects.status_differs),
    ] {
        metrics::counter!("cmp_carrier_sync_cards_total",
            "carrier" => label.clone(), "outcome" => outcome)
        .increment(n as u64);
    }
}

fn record_round(label: &str, state: &SyncState) {
    if let Some(watermark) = state.watermark {
        metrics::gauge!("cmp_carrier_sync_watermark_seconds", "carrier" => label.to_owned())
            .set(watermark.timestamp() as f64);
    }
}

#[async_trait::async_trait]
impl PeriodicJob for CarrierSync {
    fn name(&self) -> &'static str {
        "carrier_sync"
    }
    fn every(&self) -> Duration {
        SYNC_EVERY
    }
    async fn run(&self) -> Result<(), BoxError> {
        self.run_once().await.map(|_| ()).map_err(Into::into)
    }
}
