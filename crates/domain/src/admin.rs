//! Models of the admin tables: alert rules, data cleanup, manual trigger log, API keys.

use crate::{AlertRuleId, ApiKeyId, CleanupConfigId, TaskType};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// How an alert rule compares its metric with the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AlertOperator {
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
}

str_enum!(AlertOperator { Gt => ">", Ge => ">=", Lt => "<", Le => "<=" });

impl AlertOperator {
    pub fn holds(self, value: Decimal, threshold: Decimal) -> bool {
        match self {
            AlertOperator::Gt => value > threshold,
            AlertOperator::Ge => value >= threshold,
            AlertOperator::Lt => value < threshold,
            AlertOperator::Le => value <= threshold,
        }
    }
}

/// The editable part of an alert rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertRuleInput {
    pub name: String,
    /// `queue_depth`, `due_backlog`, `failure_rate`, `mean_duration_ms`, ...
    pub metric: String,
    pub task_type: Option<TaskType>,
    pub operator: AlertOperator,
    pub threshold: Decimal,
    pub window_secs: i32,
    pub enabled: bool,
    pub webhook_url: Option<String>,
    pub cooldown_secs: i32,
}

/// A row of `tb_polling_alert_rule`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertRule {
    pub id: AlertRuleId,
    #[serde(flatten)]
    pub rule: AlertRuleInput,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A row of `tb_polling_alert_history`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertHistory {
    pub id: i64,
    pub rule_id: AlertRuleId,
    pub value: Decimal,
    pub fired_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    pub notified: bool,
}

/// The editable part of a data cleanup config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupConfigInput {
    /// The table cleaned, e.g. `tb_data_usage_record`.
    pub table_name: String,
    pub retention_days: i32,
    pub enabled: bool,
    pub batch_size: i32,
}

/// A row of `tb_data_cleanup_config`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupConfig {
    pub id: CleanupConfigId,
    #[serde(flatten)]
    pub config: CleanupConfigInput,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A row of `tb_data_cleanup_log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupLog {
    pub id: i64,
    pub table_name: String,
    pub rows_deleted: i64,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// `running`, `completed`, `failed`.
    pub status: String,
    pub error: Option<String>,
}

/// A row of `tb_polling_manual_trigger_log`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualTriggerLog {
    pub id: i64,
    /// The API key name that asked.
    pub who: String,
    /// Card ids or the filter, as JSON.
    pub scope: serde_json::Value,
    pub task_types: Vec<TaskType>,
    pub count: i64,
    pub created_at: DateTime<Utc>,
}

/// What an API key may do.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiKeyRole {
    /// Everything, incl. polling configs and keys.
    Admin,
    /// Reads, plus the day-to-day actions: manual trigger, operator stop/start of cards and
    /// devices, polling status, bind/unbind, imports.
    Operator,
    /// GET only.
    Viewer,
}

str_enum!(ApiKeyRole { Admin => "admin", Operator => "operator", Viewer => "viewer" });

/// A row of `tb_api_key`. The key itself is never stored, only its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: ApiKeyId,
    pub name: String,
    pub role: ApiKeyRole,
    #[serde(skip_serializing)]
    pub key_hash: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}
