//! Polling configs and `match_config` (`docs/rules.md`, "Polling configs").

use crate::{CardCategory, CardMatchFields, CarrierId, PollingConfigId, TaskType};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A condition on the card's state that a config can require.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardCondition {
    NotRealname,
    Realname,
    Online,
    Stopped,
}

str_enum!(CardCondition {
    NotRealname => "not_realname",
    Realname => "realname",
    Online => "online",
    Stopped => "stopped",
});

impl CardCondition {
    pub fn holds(self, card: &CardMatchFields) -> bool {
        match self {
            CardCondition::NotRealname => !card.real_name_status.is_verified(),
            CardCondition::Realname => card.real_name_status.is_verified(),
            CardCondition::Online => card.network_status.is_online(),
            CardCondition::Stopped => !card.network_status.is_online(),
        }
    }
}

/// Seconds between two polls of each task type; `None`: that type is not scheduled.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Intervals {
    pub realname_interval_secs: Option<u32>,
    pub carddata_interval_secs: Option<u32>,
    pub package_interval_secs: Option<u32>,
    pub protect_interval_secs: Option<u32>,
}

impl Intervals {
    pub fn get(&self, task: TaskType) -> Option<Duration> {
        let secs = match task {
            TaskType::Realname => self.realname_interval_secs,
            TaskType::Carddata => self.carddata_interval_secs,
            TaskType::Package => self.package_interval_secs,
            TaskType::Protect => self.protect_interval_secs,
        };
        secs.filter(|s| *s > 0)
            .map(|s| Duration::from_secs(u64::from(s)))
    }

    /// The task types this config schedules.
    pub fn scheduled(&self) -> impl Iterator<Item = (TaskType, Duration)> + '_ {
        TaskType::ALL
            .into_iter()
            .filter_map(|t| self.get(t).map(|d| (t, d)))
    }
}

/// A row of `tb_polling_config`: what was asked for, with the id and times the database keeps.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollingConfig {
    pub id: PollingConfigId,
    #[serde(flatten)]
    pub spec: PollingConfigInput,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A config to create or the new content of one to update.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollingConfigInput {
    pub name: String,
    /// Lower is tried first; ties broken by id.
    pub priority: i32,
    pub enabled: bool,
    pub card_condition: Option<CardCondition>,
    pub card_category: Option<CardCategory>,
    pub carrier_id: Option<CarrierId>,
    #[serde(flatten)]
    pub intervals: Intervals,
}

impl PollingConfig {
    /// Every condition that is set holds for the card (unset means any).
    pub fn matches(&self, card: &CardMatchFields) -> bool {
        self.spec.matches(card)
    }
}

impl PollingConfigInput {
    /// Every condition that is set holds for the card (unset means any).
    pub fn matches(&self, card: &CardMatchFields) -> bool {
        self.card_condition.is_none_or(|c| c.holds(card))
            && self.card_category.is_none_or(|c| c == card.card_category)
            && self.carrier_id.is_none_or(|c| c == card.carrier_id)
    }
}

/// Sorts configs into matching order: enabled only, ascending priority, then id.
pub fn matching_order(mut configs: Vec<PollingConfig>) -> Vec<PollingConfig> {
    configs.retain(|c| c.spec.enabled);
    configs.sort_by_key(|c| (c.spec.priority, c.id));
    configs
}

/// The first config (in [`matching_order`]) that matches the card.
pub fn first_match<'a>(
    ordered: &'a [PollingConfig],
    card: &CardMatchFields,
) -> Option<&'a PollingConfig> {
    ordered.iter().find(|c| c.matches(card))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CardId, NetworkStatus, RealNameStatus};

    fn config(id: i64, priority: i32) -> PollingConfig {
        PollingConfig {
            id: PollingConfigId(id),
            spec: PollingConfigInput {
                name: format!("c{id}"),
                priority,
                enabled: true,
                card_condition: None,
                card_category: None,
                carrier_id: None,
                intervals: Intervals {
                    carddata_interval_secs: Some(60),
                    ..Intervals::default()
                },
            },
            created_at: DateTime::<Utc>::UNIX_EPOCH,
            updated_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    fn card() -> CardMatchFields {
        CardMatchFields {
            id: CardId(1),
            carrier_id: CarrierId(7),
            card_category: CardCategory::Normal,
            real_name_status: RealNameStatus::NotVerified,
            network_status: NetworkStatus::Online,
        }
    }

    #[test]
    fn priority_then_id_and_disabled_ignored() {
        let mut disabled = config(1, 0);
        disabled.spec.enabled = false;
        let ordered = matching_order(vec![config(9, 5), config(3, 5), disabled, config(2, 10)]);
        assert_eq!(
            first_match(&ordered, &card()).map(|c| c.id),
            Some(PollingConfigId(3))
        );
    }

    #[test]
    fn each_condition_kind() {
        let c = card();
        let mut cfg = config(1, 0);
        cfg.spec.card_condition = Some(CardCondition::Realname);
        assert!(!cfg.matches(&c));
        cfg.spec.card_condition = Some(CardCondition::NotRealname);
        assert!(cfg.matches(&c));
        cfg.spec.card_condition = Some(CardCondition::Stopped);
        assert!(!cfg.matches(&c));
        cfg.spec.card_condition = Some(CardCondition::Online);
        assert!(cfg.matches(&c));
        cfg.spec.card_category = Some(CardCategory::Industry);
        assert!(!cfg.matches(&c));
        cfg.spec.card_category = Some(CardCategory::Normal);
        cfg.spec.carrier_id = Some(CarrierId(8));
        assert!(!cfg.matches(&c));
        cfg.spec.carrier_id = Some(CarrierId(7));
        assert!(cfg.matches(&c));
    }

    #[test]
    fn null_interval_is_not_scheduled() {
        let cfg = config(1, 0);
        let scheduled: Vec<TaskType> = cfg.spec.intervals.scheduled().map(|(t, _)| t).collect();
        assert_eq!(scheduled, vec![TaskType::Carddata]);
        assert_eq!(cfg.spec.intervals.get(TaskType::Realname), None);
    }
}
