use crate::DeviceId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A device (`tb_device`) that one or more cards are bound to.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub id: DeviceId,
    pub device_no: String,
    /// When false, none of the device's cards is polled, whatever their own flag says.
    pub enable_polling: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
}

/// A device to insert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewDevice {
    pub device_no: String,
    pub enable_polling: bool,
}
