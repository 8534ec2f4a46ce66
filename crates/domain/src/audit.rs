use crate::{CardId, Megabytes, NetworkStatus, StopReason};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One row of `tb_data_usage_record`: what a usage poll counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataUsageRecord {
    pub card_id: CardId,
    pub delta_mb: Megabytes,
    pub month_total_mb: Megabytes,
    pub recorded_at: DateTime<Utc>,
}

/// What the carrier said to a stop or start (or that none was needed). A stop or start is
/// written `pending` before the carrier is asked and turned into one of the other outcomes
/// after (`stop-resume`, "durable intent"); the card's network status and stop reason follow
/// only an `ok` row.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GatewayOutcome {
    /// The carrier applied the change.
    Ok,
    /// No gateway call was needed (a reason change on a stopped card).
    NotCalled,
    /// The call is in flight: the intent is written, the carrier's answer not yet. At most one
    /// per card.
    Pending,
    /// The carrier did not say yes (refused, or the client's tries ended without an answer);
    /// the card is unchanged.
    Failed,
    /// The holder of a `pending` row died or was cut off before it could write the answer: the
    /// call may or may not have reached the carrier. The card is unchanged; its next
    /// evaluation decides again on the database's facts.
    Interrupted,
}

str_enum!(GatewayOutcome {
    Ok => "ok",
    NotCalled => "not_called",
    Pending => "pending",
    Failed => "failed",
    Interrupted => "interrupted",
});

/// An audit row to append to `tb_card_state_log`: every stop, start and reason change.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewCardStateLog {
    pub card_id: CardId,
    pub from_status: NetworkStatus,
    pub to_status: NetworkStatus,
    /// The reason after the change (`None`: resumed).
    pub stop_reason: Option<StopReason>,
    /// Who decided: `carddata`, `package`, `realname`, `protect`, `package_activation`,
    /// `data_reset`, `operator`, ...
    pub trigger: String,
    pub gateway_outcome: GatewayOutcome,
    /// The OpenTelemetry trace (32 hex digits) of the decision, when traces are on
    /// (`CMP_OTEL_ENDPOINT`) and it was exported; `None` otherwise. Finds the spans of the
    /// stop, its carrier call and (when sampled) the poll that led to it.
    #[serde(default)]
    pub trace_id: Option<String>,
}

/// A stored state-log row.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardStateLog {
    pub id: i64,
    #[serde(flatten)]
    pub entry: NewCardStateLog,
    pub created_at: DateTime<Utc>,
}
