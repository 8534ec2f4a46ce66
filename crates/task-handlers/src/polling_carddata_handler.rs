//! The usage poll (`docs/rules.md`, "Polls" and "Month rollover").
//!
//! Asks the carrier for the card's cumulative usage of its current month and hands it to the
//! store, which applies it to the card's month counters *as the locked database row holds them*
//! (`domain::apply_month_total`: rollover, same-month delta, never negative) and writes
//! counters, usage record and package deduction in one transaction; then lets `stop-resume`
//! decide. The handler never computes a delta from a copy of the card: overlapping polls of
//! one card count every megabyte once. It holds no rule about limits or stopping.
//!
//! Most polls change nothing but counters. So the handler first asks `stop-resume`'s decision
//! table (a pure function, `stop_resume::table_asks_for_action`) about the card and the
//! packages it just charged. Only when the table asks for an action does it pay for
//! `evaluate_and_act`, which takes the card's lock and decides again on fresh reads (a
//! carrier's push stream does the same, `admin::carriers::stream`). Every other path that can change a decision (real-name, package polls,
//! the package jobs, operators) evaluates on its own.

use crate::{HandlerError, Outcome, Polled, PollingDeps, TaskHandler, telemetry};
use chrono::{DateTime, Utc};
use domain::{
    Card, CardId, CardIdentity, Megabytes, MonthUsage, PackageOwner, PackageUsage, TaskType,
    month_start,
};
use std::sync::atomic::{AtomicI64, Ordering};
use stop_resume::{Trigger, table_asks_for_action};
use tracing::{debug, warn};

const TASK: TaskType = TaskType::Carddata;

/// Handles `carddata` polls.
pub struct PollingCarddataHandler {
    deps: PollingDeps,
    /// The last stamp handed out, in microseconds: stamps are strictly increasing in this
    /// process, so the store can tell "asked after the last write" even within a microsecond.
    last_stamp: AtomicI64,
}

impl PollingCarddataHandler {
    /// The store's `record_usage` is one transaction for counters, usage record and the
    /// deduction (`docs/rules.md`, "Usage deduction"), so no separate usage service.
    pub fn new(deps: PollingDeps) -> Self {
        Self {
            deps,
            last_stamp: AtomicI64::new(0),
        }
    }

    /// Now, or one microsecond after the previous stamp: when the carrier is asked, and when
    /// the counters are written (see `CardStore::record_usage`).
    fn stamp(&self) -> DateTime<Utc> {
        let now = self.deps.base.now();
        let wanted = now.timestamp_micros();
        let previous = self
            .last_stamp
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                Some(wanted.max(last + 1))
            })
            .unwrap_or(wanted);
        DateTime::from_timestamp_micros(wanted.max(previous + 1)).unwrap_or(now)
    }

    /// The card's valid packages as they are now: those the usage write charged, else read.
    async fn packages_now(
        &self,
        card: &Card,
        charged: Option<Vec<PackageUsage>>,
    ) -> Result<Vec<PackageUsage>, HandlerError> {
        match charged {
            Some(p) => Ok(p),
            None => {
                let owner = PackageOwner::covering(card.id, card.facts.device_id);
                Ok(self.deps.packages.usages_of(owner).await?)
            }
        }
    }

    /// The carrier's month total. A failure writes nothing: the caller reschedules the card at
    /// the retry interval. The counters follow the carrier's month; one that disagrees with the
    /// local calendar is logged and counted.
    async fn collect_usage_data(&self, card: &CardIdentity) -> Result<MonthUsage, HandlerError> {
        let usage = self
            .deps
            .gateway
            .usage(card.carrier_id, &card.iccid)
            .await
            .map_err(|error| {
                warn!(card_id = %card.id, %error,
                "流量查询失败 (usage query failed; nothing written, retry later)");
                error
            })?;
        let local = month_start(
            self.deps
                .base
                .now()
                .with_timezone(&self.deps.base.settings().timezone)
                .date_naive(),
        );
        if month_start(usage.month) != local {
            warn!(card_id = %card.id, carrier_month = %usage.month, local_month = %local,
                "the carrier reports another month than the local calendar; following the carrier");
            telemetry::change(TASK, "carrier_month_mismatch");
        }
        Ok(usage)
    }

    async fn process_card(&self, identity: CardIdentity) -> Result<Option<Polled>, HandlerError> {
        let asked_at = self.stamp();
        let reported = self.collect_usage_data(&identity).await?;
        // The delta is computed against the database row, locked, at write time.
        let Some(recorded) = self
            .deps
            .cards
            .record_usage(identity.id, &reported, asked_at, self.stamp())
            .await?
        else {
            return Ok(None);
        };
        if recorded.stale {
            debug!(card_id = %identity.id,
                "another poll of the card wrote its usage meanwhile; this answer is left to the next poll");
        }
        let mut card = recorded.card;
        if let Some(update) = &recorded.update {
            if update.corrected_downwards {
                warn!(card_id = %card.id, reported_mb = %reported.month_total_mb,
                    "流量下调 (the carrier reported less than before: a correction; delta counted as 0, baseline reset)");
                telemetry::change(TASK, "usage_correction");
            }
            if update.rolled_over {
                // Every card rolls over once a month: debug, not info, or the 1st of the month
                // writes one line per card of the fleet.
                debug!(card_id = %card.id,
                    to = ?update.counters.current_month_start_date,
                    last_month_total_mb = %update.counters.last_month_total_mb,
                    month_total_mb = %reported.month_total_mb,
                    "流量跨月 (month rolled over: last month saved, counters restarted)");
                telemetry::change(TASK, "usage_rollover");
            }
            debug!(card_id = %card.id, delta_mb = %update.delta_mb, month = ?update.counters.current_month_start_date,
                month_usage_mb = %update.counters.current_month_usage_mb, deduction_steps = recorded.steps.len(), "usage recorded");
        }
        // Whether the decision table, given the card and its packages as they are now, asks
        // for a stop, a start or a reason change (see the module doc).
        let packages = self.packages_now(&card, recorded.valid_packages).await?;
        if table_asks_for_action(&card, &packages, self.deps.base.now()) {
            card = self
                .deps
                .stop_resume
                .evaluate(card.id, Trigger::Carddata)
                .await?
                .card;
        }
        let counted = recorded.update.map_or(Megabytes::ZERO, |u| u.delta_mb);
        Ok(Some(Polled::success(card).with_usage(packages, counted)))
    }
}

#[async_trait::async_trait]
impl TaskHandler for PollingCarddataHandler {
    fn task_type(&self) -> TaskType {
        TASK
    }

    async fn handle(&self, card: CardId) -> Outcome {
        let identity = self.deps.base.get_card_with_cache(card);
        self.deps
            .base
            .run(TASK, card, identity, |c| self.process_card(c))
            .await
    }
}
