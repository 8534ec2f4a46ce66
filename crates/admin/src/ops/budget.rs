//! Each carrier's call budget against what its cards ask of it (`docs/admin-ops.md`, "Carrier
//! budgets"): allowed and used calls/s, cards per call, and per task type the cards scheduled,
//! their interval and the round time achievable at the budget. The arithmetic is
//! `domain::CarrierBudget::compute` (its module says why it holds).
//!
//! Where the figures come from, and what they cost:
//! - the limits: `tb_carrier` (one small read), the cards per call from the carrier's adapter
//!   (`CarrierGateway::batch_size`, the same figure the dispatch paces by);
//! - the cards and intervals: one `GROUP BY` of the polled cards over the four fields config
//!   matching reads (`CardAdminStore::match_groups`, the configs dry run's query: one scan of
//!   `tb_iot_card`) matched in memory, group by group, against the enabled configs — exact,
//!   with no per-card work in Rust;
//! - the calls used: `polling:stats:carrier:calls:{hour}`, which every worker adds its carrier
//!   router's calls to every few seconds ([`CallReporter`]).
//!
//! The scan is why the figures are not computed per request: the `carrier_budget` job
//! ([`BUDGET_EVERY`], under its lease, on one node) computes them, publishes them to
//! `polling:carrier:budget` and sets the `cmp_carrier_*` gauges; the API and the alert
//! evaluator read what it published.

use crate::AdminError;
use crate::error::StoreResultExt;
use domain::store::{CardAdminStore, CarrierStore, PollingConfigStore};
use domain::{
    BudgetReport, CardId, CardMatchFields, CarrierBudget, CarrierHead, CarrierHealth, CarrierId,
    Clock, MatchGroup, TaskType, first_match, matching_order,
};
use gateway::carriers::{AdapterContext, build_adapter};
use polling_queue::{CarrierBudgetBoard, CarrierCalls};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How often the `carrier_budget` job computes the figures.
pub const BUDGET_EVERY: Duration = Duration::from_secs(60);

/// The whole minutes `used_calls_per_sec` is averaged over.
pub const USED_WINDOW_MINUTES: u32 = 5;

/// The stores the figures are read from.
#[derive(Clone)]
pub struct BudgetStores {
    pub carriers: Arc<dyn CarrierStore>,
    /// `match_groups`: the polled cards grouped by the fields config matching reads.
    pub cards: Arc<dyn CardAdminStore>,
    pub configs: Arc<dyn PollingConfigStore>,
}

/// Computes, publishes and reads the carriers' budget figures. Cheap to clone.
#[derive(Clone)]
pub struct BudgetService {
    stores: BudgetStores,
    calls: CarrierCalls,
    board: CarrierBudgetBoard,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for BudgetService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetService").finish_non_exhaustive()
    }
}

impl BudgetService {
    pub fn new(
        stores: BudgetStores,
        calls: CarrierCalls,
        board: CarrierBudgetBoard,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            stores,
            calls,
            board,
            clock,
        }
    }

    /// The figures now, from the stores and the call counters (one scan of the card table).
    pub async fn compute(&self) -> Result<BudgetReport, AdminError> {
        let now = self.clock.now();
        let mut accounts = self.stores.carriers.all().await.admin()?;
        accounts.sort_by_key(|a| a.carrier_id);
        let configs = matching_order(self.stores.configs.list_all().await.admin()?);
        let mut groups: HashMap<CarrierId, Vec<MatchGroup>> = HashMap::new();
        for g in self.stores.cards.match_groups().await.admin()? {
            groups.entry(g.carrier_id).or_default().push(g);
        }
        let used = self.calls.per_carrier(now, USED_WINDOW_MINUTES).await?;
        let window_secs = USED_WINDOW_MINUTES * 60;
        // Only the batch size is asked of the adapters: the time zone does not matter.
        let ctx = AdapterContext::new(chrono_tz::UTC, self.clock.clone());
        let mut carriers = Vec::with_capacity(accounts.len());
        for account in accounts {
            let id = account.carrier_id;
            // An account whose adapter cannot be built is refused every call: one card a call.
            let batch = build_adapter(&account, &ctx)
                .map(|a| a.batch_size(id))
                .unwrap_or(1)
                .max(1);
            let batch = u32::try_from(batch).unwrap_or(u32::MAX);
            let mut tasks = Vec::new();
            for g in groups.get(&id).into_iter().flatten() {
                let fields = CardMatchFields {
                    id: CardId(0),
                    carrier_id: g.carrier_id,
                    card_category: g.card_category,
                    real_name_status: g.real_name_status,
                    network_status: g.network_status,
                };
                let Some(config) = first_match(&configs, &fields) else {
                    continue;
                };
                for (task, interval) in config.spec.intervals.scheduled() {
                    if let Some(per_call) = cards_per_call(task, batch) {
                        tasks.push((task, interval.as_secs(), g.cards, per_call));
                    }
                }
            }
            let used_calls = used.get(&id).copied().unwrap_or(0);
            let head = CarrierHead {
                carrier_id: id,
                name: account.name,
                protocol: account.protocol,
                enabled: account.enabled,
                rate_limit_per_sec: account.limits.rate_limit_per_sec,
                max_concurrent: account.limits.max_concurrent,
                batch_size: batch,
            };
            carriers.push(CarrierBudget::compute(
                head,
                used_calls as f64 / f64::from(window_secs),
                tasks,
            ));
        }
        Ok(BudgetReport {
            computed_at: Some(now),
            used_window_secs: window_secs,
            carriers,
        })
    }

    /// Computes the figures, publishes them for the API and the alert evaluator, and sets this
    /// node's gauges: the `carrier_budget` job's run.
    pub async fn refresh(&self) -> Result<BudgetReport, AdminError> {
        let report = self.compute().await?;
        self.board.publish(&report).await?;
        super::budget_gauges::export(&report);
        Ok(report)
    }

    /// The figures last published; `computed_at: null` and no carrier when none were
    /// published within `polling_queue::BUDGET_TTL_SECS` (no worker ran the job).
    pub async fn report(&self) -> Result<BudgetReport, AdminError> {
        Ok(self.board.read().await?.unwrap_or(BudgetReport {
            computed_at: None,
            used_window_secs: USED_WINDOW_MINUTES * 60,
            carriers: Vec::new(),
        }))
    }

    /// The figures last published; `None` when none were.
    pub async fn published(&self) -> Result<Option<BudgetReport>, AdminError> {
        Ok(self.board.read().await?)
    }
}

/// Cards one query of `task` carries at the carrier's `batch` size: real-name and usage go in
/// batches (`gateway::BatchingGateway`), packages one card a call; the protect poll makes no
/// query (`None`).
pub fn cards_per_call(task: TaskType, batch: u32) -> Option<u32> {
    match task {
        TaskType::Realname | TaskType::Carddata => Some(batch.max(1)),
        TaskType::Package => Some(1),
        TaskType::Protect => None,
    }
}

/// Adds a worker's carrier calls to the cluster's per-minute counts: every report, the calls
/// its router counted (answered and failed; not those our own budget held back) since the
/// last one. Keep one per process, beside the router whose health it is given.
#[derive(Debug)]
pub struct CallReporter {
    calls: CarrierCalls,
    seen: HashMap<CarrierId, u64>,
}

impl CallReporter {
    pub fn new(calls: CarrierCalls) -> Self {
        Self {
            calls,
            seen: HashMap::new(),
        }
    }

    /// Records, at `now`, what `health` (the router's tallies since the process started)
    /// counted since the last report. A count that failed to reach Redis is lost, never
    /// counted twice.
    pub async fn report(&mut self, health: &[CarrierHealth], now: chrono::DateTime<chrono::Utc>) {
        let mut delta = Vec::with_capacity(health.len());
        for h in health {
            let total = h.calls_ok + h.calls_failed;
            let before = self.seen.insert(h.carrier_id, total).unwrap_or(0);
            delta.push((h.carrier_id, total.saturating_sub(before)));
        }
        if let Err(e) = self.calls.record(&delta, now).await {
            tracing::debug!(error = %e, "carrier calls not counted");
        }
    }
}
