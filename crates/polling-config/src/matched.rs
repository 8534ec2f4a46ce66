//! The in-memory view: configs in matching order, and the result of a match.

use domain::{CardMatchFields, Intervals, PollingConfig, PollingConfigId, TaskType};
use std::sync::Arc;
use std::time::Duration;

/// The config a card matched: what to schedule and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchedConfig {
    id: PollingConfigId,
    priority: i32,
    intervals: Intervals,
}

impl MatchedConfig {
    fn of(config: &PollingConfig) -> Self {
        Self {
            id: config.id,
            priority: config.spec.priority,
            intervals: config.spec.intervals,
        }
    }

    /// `tb_polling_config.id` of the config that won.
    pub fn id(&self) -> PollingConfigId {
        self.id
    }

    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// The polling interval of `task`; `None`: the config does not schedule that type.
    pub fn interval(&self, task: TaskType) -> Option<Duration> {
        self.intervals.get(task)
    }

    /// The task types the config schedules, with their intervals, in [`TaskType::ALL`] order.
    pub fn scheduled(&self) -> impl Iterator<Item = (TaskType, Duration)> + '_ {
        self.intervals.scheduled()
    }

    /// The task types the config schedules.
    pub fn task_types(&self) -> Vec<TaskType> {
        self.scheduled().map(|(t, _)| t).collect()
    }
}

/// An immutable set of enabled configs in matching order (ascending priority, then id).
///
/// Cheap to clone; batch users (the initializer) take one per page instead of locking per card.
#[derive(Debug, Clone, Default)]
pub struct ConfigSnapshot {
    ordered: Arc<[PollingConfig]>,
}

impl ConfigSnapshot {
    /// Keeps the enabled configs of `configs` and sorts them into matching order.
    pub fn new(configs: Vec<PollingConfig>) -> Self {
        Self {
            ordered: domain::matching_order(configs).into(),
        }
    }

    /// `docs/rules.md`, "Polling configs": the first enabled config, by priority then id, whose
    /// every set condition holds for the card. Memory only.
    pub fn match_config(&self, card: &CardMatchFields) -> Option<MatchedConfig> {
        domain::first_match(&self.ordered, card).map(MatchedConfig::of)
    }

    /// A digest of the enabled configs (FNV-1a over their JSON, in matching order): equal on
    /// every process that loaded the same set, so a queue reconciliation can tell whether it
    /// already ran for the configs in force.
    pub fn fingerprint(&self) -> u64 {
        let json = serde_json::to_vec(&*self.ordered).unwrap_or_default();
        json.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    /// The task types the matched config of `card` schedules, by [`TaskType::index`]; all
    /// `false` when no config matches.
    pub fn scheduled_types(&self, card: &CardMatchFields) -> [bool; 4] {
        let mut wanted = [false; 4];
        if let Some(matched) = self.match_config(card) {
            for (task, _) in matched.scheduled() {
                wanted[task.index()] = true;
            }
        }
        wanted
    }

    /// The enabled configs in matching order.
    pub fn configs(&self) -> &[PollingConfig] {
        &self.ordered
    }

    pub fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }
}
