//! Manual trigger: push cards on `polling:manual:{type}`, drained by the scheduler before the
//! shard queues; every trigger is logged in `tb_polling_manual_trigger_log`.

use crate::error::{Checks, StoreResultExt};
use crate::{Admin, AdminError};
use domain::store::{Page, Paged};
use domain::{
    CardCategory, CardId, CardQuery, CarrierId, DeviceId, ManualTriggerLog, NetworkStatus, TaskType,
};
use serde::{Deserialize, Serialize};

/// The largest batch.
pub const MAX_BATCH: usize = 10_000;
/// The most cards one by-filter trigger pushes.
pub const MAX_BY_FILTER: usize = 100_000;

/// `POST /polling-manual-trigger/single`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerSingle {
    pub card_id: CardId,
    /// Default: every task type.
    #[serde(default)]
    pub task_types: Option<Vec<TaskType>>,
}

/// `POST /polling-manual-trigger/batch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerBatch {
    /// 1 to 10,000 card ids.
    pub card_ids: Vec<CardId>,
    #[serde(default)]
    pub task_types: Option<Vec<TaskType>>,
}

/// `POST /polling-manual-trigger/by-filter`: at least one filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerByFilter {
    #[serde(default)]
    pub device_id: Option<DeviceId>,
    #[serde(default)]
    pub carrier_id: Option<CarrierId>,
    /// The platform status code.
    #[serde(default)]
    pub status: Option<i16>,
    #[serde(default)]
    pub network_status: Option<NetworkStatus>,
    #[serde(default)]
    pub card_category: Option<CardCategory>,
    #[serde(default)]
    pub task_types: Option<Vec<TaskType>>,
}

/// `POST /polling-manual-trigger/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerCancel {
    /// The list to empty; absent: every type's.
    #[serde(default)]
    pub task_type: Option<TaskType>,
}

/// What a trigger pushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerReport {
    /// Cards pushed (per task type).
    pub cards: usize,
    pub task_types: Vec<TaskType>,
    /// Ids that are not live cards (skipped); at most 100 listed.
    pub missing: Vec<CardId>,
    /// By filter: more cards matched than one trigger pushes.
    pub truncated: bool,
    pub log_id: i64,
}

/// Length of one manual list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualListLen {
    pub task_type: TaskType,
    pub waiting: u64,
}

/// What a cancel removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelReport {
    pub cleared: Vec<ManualListLen>,
}

fn types(t: &Option<Vec<TaskType>>) -> Result<Vec<TaskType>, AdminError> {
    match t {
        None => Ok(TaskType::ALL.to_vec()),
        Some(v) if v.is_empty() => Err(AdminError::invalid("/task_types", "must not be empty")),
        Some(v) => {
            let mut v = v.clone();
            v.sort_unstable();
            v.dedup();
            Ok(v)
        }
    }
}

impl Admin {
    async fn push(
        &self,
        who: &str,
        scope: serde_json::Value,
        cards: &[CardId],
        task_types: &[TaskType],
    ) -> Result<i64, AdminError> {
        for &task in task_types {
            self.queue.enqueue_manual_many(cards, task).await?;
        }
        let log = self
            .stores
            .manual_triggers
            .append(who, &scope, task_types, cards.len() as i64)
            .await
            .admin()?;
        Ok(log.id)
    }

    pub async fn trigger_single(
        &self,
        who: &str,
        body: &TriggerSingle,
    ) -> Result<TriggerReport, AdminError> {
        let task_types = types(&body.task_types)?;
        self.card(body.card_id).await?;
        let scope = serde_json::json!({ "card_ids": [body.card_id] });
        let log_id = self.push(who, scope, &[body.card_id], &task_types).await?;
        Ok(TriggerReport {
            cards: 1,
            task_types,
            missing: vec![],
            truncated: false,
            log_id,
        })
    }

    pub async fn trigger_batch(
        &self,
        who: &str,
        body: &TriggerBatch,
    ) -> Result<TriggerReport, AdminError> {
        let task_types = types(&body.task_types)?;
        let mut checks = Checks::default();
        checks.check(
            !body.card_ids.is_empty() && body.card_ids.len() <= MAX_BATCH,
            "/card_ids",
            "must hold 1 to 10000 card ids",
        );
        checks.finish()?;
        let mut ids = body.card_ids.clone();
        ids.sort_unstable();
        ids.dedup();
        let live: Vec<CardId> = self
            .stores
            .cards
            .get_many(&ids)
            .await
            .admin()?
            .iter()
            .map(|c| c.id)
            .collect();
        let missing: Vec<CardId> = ids
            .iter()
            .filter(|i| !live.contains(i))
            .take(100)
            .copied()
            .collect();
        let scope = serde_json::json!({ "card_ids": live.len(), "requested": ids.len() });
        let log_id = self.push(who, scope, &live, &task_types).await?;
        Ok(TriggerReport {
            cards: live.len(),
            task_types,
            missing,
            truncated: false,
            log_id,
        })
    }

    pub async fn trigger_by_filter(
        &self,
        who: &str,
        body: &TriggerByFilter,
    ) -> Result<TriggerReport, AdminError> {
        let task_types = types(&body.task_types)?;
        let query = CardQuery {
            device_id: body.device_id,
            carrier_id: body.carrier_id,
            status: body.status,
            network_status: body.network_status,
            card_category: body.card_category,
            ..CardQuery::default()
        };
        if query == CardQuery::default() {
            return Err(AdminError::invalid(
                "",
                "give at least one filter: device_id, carrier_id, status, network_status or card_category",
            ));
        }
        let mut cards = Vec::new();
        let mut after = None;
        let mut truncated = false;
        loop {
            let page = self
                .stores
                .card_admin
                .search_ids(&query, after, 10_000)
                .await
                .admin()?;
            let Some(&last) = page.last() else { break };
            after = Some(last);
            cards.extend(page);
            if cards.len() >= MAX_BY_FILTER {
                truncated = cards.len() > MAX_BY_FILTER
                    || !self
                        .stores
                        .card_admin
                        .search_ids(&query, after, 1)
                        .await
                        .admin()?
                        .is_empty();
                cards.truncate(MAX_BY_FILTER);
                break;
            }
        }
        let scope = serde_json::json!({ "filter": query, "cards": cards.len() });
        let log_id = self.push(who, scope, &cards, &task_types).await?;
        Ok(TriggerReport {
            cards: cards.len(),
            task_types,
            missing: vec![],
            truncated,
            log_id,
        })
    }

    pub async fn trigger_logs(&self, page: Page) -> Result<Paged<ManualTriggerLog>, AdminError> {
        self.stores.manual_triggers.list(page).await.admin()
    }

    pub async fn manual_status(&self) -> Result<Vec<ManualListLen>, AdminError> {
        let mut out = Vec::new();
        for task_type in TaskType::ALL {
            out.push(ManualListLen {
                task_type,
                waiting: self.queue.manual_len(task_type).await?,
            });
        }
        Ok(out)
    }

    pub async fn cancel_manual(&self, body: &TriggerCancel) -> Result<CancelReport, AdminError> {
        let which = body.task_type.map_or(TaskType::ALL.to_vec(), |t| vec![t]);
        let mut cleared = Vec::new();
        for task_type in which {
            cleared.push(ManualListLen {
                task_type,
                waiting: self.queue.clear_manual(task_type).await?,
            });
        }
        Ok(CancelReport { cleared })
    }
}
