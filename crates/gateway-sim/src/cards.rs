//! The cards of the control API: what `POST /sim/cards` registers, what `PATCH
//! /sim/cards/{iccid}` changes and what `GET /sim/cards/{iccid}` shows.

use domain::{CarrierPackage, Megabytes, NetworkStatus, RealNameStatus};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A card as registered through `POST /sim/cards`. Absent fields take the defaults of a healthy
/// card: verified, online, nothing used, seeded growth, no package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimCardSpec {
    pub iccid: String,
    #[serde(default = "verified")]
    pub real_name_status: RealNameStatus,
    #[serde(default = "online")]
    pub network_status: NetworkStatus,
    /// The carrier's total of the current month.
    #[serde(default)]
    pub month_total_mb: Megabytes,
    /// Added to `month_total_mb` by each usage query; 0 keeps usage fixed. Absent: drawn from
    /// the simulator's seed and the ICCID (0.00 to 10.00), the same on every run.
    #[serde(default)]
    pub growth_mb_per_query: Option<Megabytes>,
    #[serde(default)]
    pub packages: Vec<CarrierPackage>,
    /// `YYYY-MM` the total belongs to; absent: the simulator's current month. A usage query in
    /// a later month starts the total again from 0.
    #[serde(default)]
    pub month: Option<String>,
}

impl SimCardSpec {
    /// A healthy card with fixed usage (`growth_mb_per_query` 0).
    pub fn new(iccid: impl Into<String>) -> Self {
        Self {
            iccid: iccid.into(),
            real_name_status: RealNameStatus::Verified,
            network_status: NetworkStatus::Online,
            month_total_mb: Decimal::ZERO,
            growth_mb_per_query: Some(Decimal::ZERO),
            packages: Vec::new(),
            month: None,
        }
    }
}

fn verified() -> RealNameStatus {
    RealNameStatus::Verified
}

fn online() -> NetworkStatus {
    NetworkStatus::Online
}

/// `PATCH /sim/cards/{iccid}`: any field of the card; absent = unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimCardPatch {
    pub real_name_status: Option<RealNameStatus>,
    pub network_status: Option<NetworkStatus>,
    pub month_total_mb: Option<Megabytes>,
    pub growth_mb_per_query: Option<Megabytes>,
    pub packages: Option<Vec<CarrierPackage>>,
    /// `YYYY-MM`.
    pub month: Option<String>,
}

/// `GET /sim/cards/{iccid}`: the card's state and what the simulator saw of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimCardView {
    pub iccid: String,
    pub real_name_status: RealNameStatus,
    pub network_status: NetworkStatus,
    /// `YYYY-MM` of `month_total_mb`.
    pub month: String,
    pub month_total_mb: Megabytes,
    pub growth_mb_per_query: Megabytes,
    pub packages: Vec<CarrierPackage>,
    /// Every `stop` request naming the card, whatever its outcome (injected failures included).
    pub stop_calls: u32,
    /// Every `start` request naming the card, whatever its outcome.
    pub start_calls: u32,
    /// `stop` requests that were answered 200 (and stopped the card).
    pub stops_applied: u32,
    /// `start` requests that were answered 200.
    pub starts_applied: u32,
    /// Usage queries answered 200.
    pub usage_queries: u32,
    /// When the card's record last changed (registered, patched, stopped or started), unix
    /// milliseconds of the wall clock: what the platforms' "modified since" searches compare.
    #[serde(default)]
    pub changed_at_ms: u64,
}
