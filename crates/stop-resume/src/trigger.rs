//! Who asked for an evaluation: the `trigger` column of `tb_card_state_log`.

use domain::TaskType;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The caller of an evaluation or operator action, written verbatim to the audit row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Trigger {
    /// The usage poll, after deducting the delta.
    Carddata,
    /// The package poll.
    Package,
    /// The real-name poll (after a 0 -> 1 change and the first real-name activation).
    Realname,
    /// The protect handler, once the device's protect period has ended.
    Protect,
    /// The periodic package expiry / activation check.
    PackageActivation,
    /// The periodic monthly data reset.
    DataReset,
    /// An operator through the admin API (`POST /cards/{id}/stop` and `/start`).
    Operator,
    /// `PATCH /assets/{type}/{id}/polling-status`.
    AssetPollingControl,
    /// A carrier's push stream (`POST /api/carriers/{carrier_id}/stream`), after deducting
    /// the usage it reported.
    CarrierStream,
}

impl Trigger {
    pub const fn as_str(self) -> &'static str {
        match self {
            Trigger::Carddata => "carddata",
            Trigger::Package => "package",
            Trigger::Realname => "realname",
            Trigger::Protect => "protect",
            Trigger::PackageActivation => "package_activation",
            Trigger::DataReset => "data_reset",
            Trigger::Operator => "operator",
            Trigger::AssetPollingControl => "asset_polling_control",
            Trigger::CarrierStream => "carrier_stream",
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The poll handlers name themselves by their task type.
impl From<TaskType> for Trigger {
    fn from(t: TaskType) -> Self {
        match t {
            TaskType::Realname => Trigger::Realname,
            TaskType::Carddata => Trigger::Carddata,
            TaskType::Package => Trigger::Package,
            TaskType::Protect => Trigger::Protect,
        }
    }
}
