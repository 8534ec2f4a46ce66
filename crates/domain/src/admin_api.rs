//! Models the admin API reads and writes beyond the core tables: the card search of the
//! operators, the audit of their writes (`tb_admin_audit_log`), and the grouped counts a
//! polling-config dry run weighs.

use crate::{
    ApiKeyId, CardCategory, CarrierId, DeviceId, NetworkStatus, RealNameStatus, StopReason,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The operators' card search (`GET /cards`, manual trigger by filter). Every field set must
/// hold; unset means any.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CardQuery {
    /// Cards whose ICCID starts with this.
    pub iccid_prefix: Option<String>,
    pub msisdn: Option<String>,
    pub device_id: Option<DeviceId>,
    pub carrier_id: Option<CarrierId>,
    /// The platform status code.
    pub status: Option<i16>,
    pub network_status: Option<NetworkStatus>,
    /// `Some(None)` is not expressible on the wire; a stop reason filter names one reason.
    pub stop_reason: Option<StopReason>,
    pub card_category: Option<CardCategory>,
    pub real_name_status: Option<RealNameStatus>,
    pub enable_polling: Option<bool>,
}

/// Live, polling-enabled cards that share every field config matching reads, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchGroup {
    pub carrier_id: CarrierId,
    pub card_category: CardCategory,
    pub real_name_status: RealNameStatus,
    pub network_status: NetworkStatus,
    pub cards: u64,
}

/// One write through the admin API, to append to `tb_admin_audit_log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewAdminAudit {
    /// The key that asked; `None` when the request carried no valid key.
    pub api_key_id: Option<ApiKeyId>,
    pub key_name: Option<String>,
    pub method: String,
    /// The route template, e.g. `/api/admin/cards/{id}/stop`.
    pub route: String,
    /// The ids the write was aimed at (path ids, body ids), as JSON.
    pub target: serde_json::Value,
    /// A summary of the body (large arrays cut to their length).
    pub summary: serde_json::Value,
    /// The HTTP status answered.
    pub status: u16,
    /// The OpenTelemetry trace (32 hex digits) of the request, when traces are on
    /// (`CMP_OTEL_ENDPOINT`; writes are always exported); `None` otherwise.
    #[serde(default)]
    pub trace_id: Option<String>,
}

/// A stored `tb_admin_audit_log` row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminAudit {
    pub id: i64,
    #[serde(flatten)]
    pub entry: NewAdminAudit,
    pub created_at: DateTime<Utc>,
}
