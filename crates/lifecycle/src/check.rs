//! [`QueueChecker`]: the operator's invariant check of the queues against the database
//! (`cmp-worker check [--repair]`).
//!
//! Two streaming passes, each in bounded memory:
//! 1. **cards -> queues**: keyset pages of polling-enabled cards; each card is matched against
//!    the configs in force and its membership in the four queues of its shard read in one
//!    pipeline (`ZMSCORE`). A type its config schedules but it is not queued for is
//!    [`Kind::Missing`]; a type it is queued for but its config does not schedule is
//!    [`Kind::Unscheduled`].
//! 2. **queues -> cards**: every `polling:shard:{s}:queue:{t}` key walked with `ZSCAN`; a member
//!    on a shard other than `card_id % shard_count` is [`Kind::WrongShard`]; the others are
//!    looked up in the database in batches, and one that is not a live, polling-enabled card
//!    (deleted, disabled on the card or its device, unknown, not an id) is [`Kind::NotLive`].
//!
//! `repair` fixes each finding as it is found: a missing entry is added with the initializer's
//! spread first score (`now + hash(card, type) % interval`, [`first_score`]) by `ZADD NX`, a
//! wrong entry is removed from the key it was found in. An entry that is right is never
//! written, so no correct score moves.
//!
//! On a live system a card changed between the two reads of one batch can show up once
//! (e.g. created after its page was read); a second run tells a transient from a fault.

use crate::{LifecycleError, first_score};
use domain::store::CardStore;
use domain::{CardId, Clock, TaskType};
use polling_config::PollingConfigManager;
use polling_queue::PollingQueueManager;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// A kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A live card is not queued for a type its matched config schedules.
    Missing,
    /// A live card is queued for a type its matched config (or the lack of one) does not
    /// schedule.
    Unscheduled,
    /// A queue member that is not a live, polling-enabled card.
    NotLive,
    /// A member on a shard other than `card_id % shard_count`.
    WrongShard,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Missing,
        Kind::Unscheduled,
        Kind::NotLive,
        Kind::WrongShard,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Missing => "missing",
            Kind::Unscheduled => "unscheduled",
            Kind::NotLive => "not_live",
            Kind::WrongShard => "wrong_shard",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// Settings of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckSettings {
    /// Must equal the queue manager's.
    pub shard_count: u32,
    /// Cards per keyset page of pass 1.
    pub page_size: u32,
    /// `COUNT` of each `ZSCAN` step of pass 2 (also the database batch).
    pub scan_count: u32,
    /// Examples kept per kind.
    pub examples: usize,
    /// Fix what is found.
    pub repair: bool,
}

impl Default for CheckSettings {
    fn default() -> Self {
        Self {
            shard_count: 16,
            page_size: 10_000,
            scan_count: 5_000,
            examples: 10,
            repair: false,
        }
    }
}

/// The findings of one kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Queue entries (card x type) of this kind.
    pub count: u64,
    /// Up to [`CheckSettings::examples`] members (card ids), with the task type.
    pub examples: Vec<(String, TaskType)>,
    /// Entries repaired (added or removed).
    pub repaired: u64,
}

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Polling-enabled cards read in pass 1.
    pub cards: u64,
    /// Queue members read in pass 2.
    pub members: u64,
    /// Indexed by [`Kind`] (`Kind::ALL` order).
    pub findings: [Findings; 4],
}

impl CheckReport {
    pub fn of(&self, kind: Kind) -> &Findings {
        &self.findings[kind.index()]
    }

    /// Whether nothing was wrong.
    pub fn clean(&self) -> bool {
        self.findings.iter().all(|f| f.count == 0)
    }

    fn found(&mut self, kind: Kind, member: &str, task: TaskType, limit: usize) {
        let f = &mut self.findings[kind.index()];
        f.count += 1;
        if f.examples.len() < limit {
            f.examples.push((member.to_owned(), task));
        }
    }
}

/// Checks (and repairs) the queues against the card table.
#[derive(Clone)]
pub struct QueueChecker {
    cards: Arc<dyn CardStore>,
    queue: PollingQueueManager,
    configs: PollingConfigManager,
    clock: Arc<dyn Clock>,
    settings: CheckSettings,
}

impl std::fmt::Debug for QueueChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueChecker")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl QueueChecker {
    pub fn new(
        cards: Arc<dyn CardStore>,
        queue: PollingQueueManager,
        configs: PollingConfigManager,
        clock: Arc<dyn Clock>,
        mut settings: CheckSettings,
    ) -> Self {
        settings.shard_count = settings.shard_count.max(1);
        settings.page_size = settings.page_size.max(1);
        Self {
            cards,
            queue,
            configs,
            clock,
            settings,
        }
    }

    /// Both passes over the whole fleet and every shard key.
    pub async fn run(&self) -> Result<CheckReport, LifecycleError> {
        let mut report = CheckReport::default();
        self.cards_to_queues(&mut report).await?;
        self.queues_to_cards(&mut report).await?;
        Ok(report)
    }

    async fn cards_to_queues(&self, report: &mut CheckReport) -> Result<(), LifecycleError> {
        let limit = self.settings.examples;
        let mut after: Option<CardId> = None;
        loop {
            let page = self
                .cards
                .page_polling_enabled(after, self.settings.page_size)
                .await?;
            let Some(last) = page.last() else {
                return Ok(());
            };
            after = Some(last.id);
            report.cards += page.len() as u64;
            let ids: Vec<CardId> = page.iter().map(|c| c.id).collect();
            let present = self.queue.membership(&ids).await?;
            let snapshot = self.configs.snapshot();
            let now = self.clock.now().timestamp();
            let (mut add, mut remove) = (Vec::new(), Vec::new());
            for (card, present) in page.iter().zip(present) {
                let matched = snapshot.match_config(card);
                for task in TaskType::ALL {
                    let interval = matched.as_ref().and_then(|m| m.interval(task));
                    let member = card.id.to_string();
                    match (interval, present[task.index()]) {
                        (Some(interval), false) => {
                            report.found(Kind::Missing, &member, task, limit);
                            let score =
                                first_score(card.id.get(), task, interval.as_secs(), now) as f64;
                            add.push((card.id, task, score));
                        }
                        (None, true) => {
                            report.found(Kind::Unscheduled, &member, task, limit);
                            remove.push((self.queue.shard_of(card.id), task, member));
                        }
                        _ => {}
                    }
                }
            }
            if self.settings.repair {
                report.findings[Kind::Missing.index()].repaired +=
                    self.queue.add_if_absent(&add).await?;
                report.findings[Kind::Unscheduled.index()].repaired +=
                    self.remove_each(remove).await?;
            }
        }
    }

    /// Removes each `(shard, task, member)` from that one key: one pipeline per key.
    async fn remove_each(
        &self,
        entries: Vec<(u32, TaskType, String)>,
    ) -> Result<u64, LifecycleError> {
        let mut by_key = BTreeMap::<(u32, usize), Vec<String>>::new();
        for (shard, task, member) in entries {
            by_key
                .entry((shard, task.index()))
                .or_default()
                .push(member);
        }
        let mut removed = 0;
        for ((shard, task), members) in by_key {
            removed += self
                .queue
                .remove_members(shard, TaskType::ALL[task], &members)
                .await?;
        }
        Ok(removed)
    }

    async fn queues_to_cards(&self, report: &mut CheckReport) -> Result<(), LifecycleError> {
        for shard in 0..self.settings.shard_count {
            for task in TaskType::ALL {
                let mut cursor = "0".to_owned();
                loop {
                    let step = self
                        .queue
                        .scan_queue(shard, task, &cursor, self.settings.scan_count)
                        .await?;
                    self.check_members(shard, task, &step.members, report)
                        .await?;
                    if step.done() {
                        break;
                    }
                    cursor = step.cursor;
                }
            }
        }
        Ok(())
    }

    /// Pass 2 for one `ZSCAN` step of the queue of `task` on `shard`.
    async fn check_members(
        &self,
        shard: u32,
        task: TaskType,
        members: &[String],
        report: &mut CheckReport,
    ) -> Result<(), LifecycleError> {
        let limit = self.settings.examples;
        report.members += members.len() as u64;
        let (mut wrong_shard, mut not_live, mut ids) = (Vec::new(), Vec::new(), Vec::new());
        for member in members {
            match member.parse::<CardId>() {
                Ok(card) if card.shard(self.settings.shard_count) != shard => {
                    report.found(Kind::WrongShard, member, task, limit);
                    wrong_shard.push(member.clone());
                }
                Ok(card) => ids.push(card),
                Err(_) => {
                    report.found(Kind::NotLive, member, task, limit);
                    not_live.push(member.clone());
                }
            }
        }
        let live: HashSet<CardId> = self
            .cards
            .polling_enabled_among(&ids)
            .await?
            .into_iter()
            .collect();
        for card in ids.iter().filter(|card| !live.contains(card)) {
            let member = card.to_string();
            report.found(Kind::NotLive, &member, task, limit);
            not_live.push(member);
        }
        if self.settings.repair {
            report.findings[Kind::WrongShard.index()].repaired +=
                self.queue.remove_members(shard, task, &wrong_shard).await?;
            report.findings[Kind::NotLive.index()].repaired +=
                self.queue.remove_members(shard, task, &not_live).await?;
        }
        Ok(())
    }
}
