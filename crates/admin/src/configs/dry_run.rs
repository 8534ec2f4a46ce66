//! `POST /polling-configs/dry-run`: what a config would do before it is saved.
//!
//! The estimate reads one `GROUP BY` of the polled cards over the four fields matching looks
//! at (carrier, category, real-name, network status) and runs the match in memory on those
//! groups, weighted by their counts: exact for the match itself, at the cost of one scan of the
//! card table (docs/decisions.md).

use super::ConfigBody;
use crate::error::StoreResultExt;
use crate::{Admin, AdminError};
use chrono::Utc;
use domain::{
    CardId, CardMatchFields, Intervals, PollingConfig, PollingConfigId, TaskType, first_match,
    matching_order,
};
use serde::{Deserialize, Serialize};

/// A config to try, optionally as the new content of an existing one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DryRunBody {
    /// The config it would replace; absent: a new config.
    #[serde(default)]
    pub id: Option<PollingConfigId>,
    pub config: ConfigBody,
}

/// What saving the config would change, counted over the cards polled now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DryRun {
    /// Live cards with polling enabled (card and device).
    pub polled_cards: u64,
    /// Cards that would match this config.
    pub would_match: u64,
    /// Cards whose interval of at least one task type would change.
    pub would_change_interval: u64,
    /// Cards whose set of scheduled task types would change (queue membership).
    pub would_change_queues: u64,
    /// Cards that match no config now and would match one.
    pub newly_matched: u64,
    /// Cards that match a config now and would match none.
    pub newly_unmatched: u64,
}

fn intervals_of(config: Option<&PollingConfig>) -> Option<Intervals> {
    config.map(|c| c.spec.intervals)
}

fn scheduled(i: Option<Intervals>) -> [bool; 4] {
    TaskType::ALL.map(|t| i.is_some_and(|i| i.get(t).is_some()))
}

impl Admin {
    pub async fn dry_run_config(&self, body: &DryRunBody) -> Result<DryRun, AdminError> {
        let input = body.config.validate()?;
        let all = self.stores.configs.list_all().await.admin()?;
        if let Some(id) = body.id
            && !all.iter().any(|c| c.id == id)
        {
            return Err(AdminError::NotFound(format!("polling config {id}")));
        }
        let now = Utc::now();
        let candidate = PollingConfig {
            // A new config gets the next id: it sorts after every existing one of its priority.
            id: body.id.unwrap_or(PollingConfigId(i64::MAX)),
            spec: input,
            created_at: now,
            updated_at: now,
        };
        let before = matching_order(all.clone());
        let mut after_all: Vec<PollingConfig> =
            all.into_iter().filter(|c| c.id != candidate.id).collect();
        after_all.push(candidate.clone());
        let after = matching_order(after_all);
        let groups = self.stores.card_admin.match_groups().await.admin()?;
        let mut out = DryRun {
            polled_cards: 0,
            would_match: 0,
            would_change_interval: 0,
            would_change_queues: 0,
            newly_matched: 0,
            newly_unmatched: 0,
        };
        for g in groups {
            let fields = CardMatchFields {
                id: CardId(0),
                carrier_id: g.carrier_id,
                card_category: g.card_category,
                real_name_status: g.real_name_status,
                network_status: g.network_status,
            };
            let old = first_match(&before, &fields);
            let new = first_match(&after, &fields);
            out.polled_cards += g.cards;
            if new.is_some_and(|c| c.id == candidate.id) {
                out.would_match += g.cards;
            }
            let (oi, ni) = (intervals_of(old), intervals_of(new));
            if oi != ni {
                out.would_change_interval += g.cards;
            }
            if scheduled(oi) != scheduled(ni) {
                out.would_change_queues += g.cards;
            }
            match (old.is_some(), new.is_some()) {
                (false, true) => out.newly_matched += g.cards,
                (true, false) => out.newly_unmatched += g.cards,
                _ => {}
            }
        }
        Ok(out)
    }
}
