use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The four kinds of poll. The strings are part of the contract: Redis keys, JSON and metric
/// labels use them verbatim.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskType {
    /// Real-name (KYC) status of the card.
    Realname,
    /// Cumulative data usage of the current month.
    Carddata,
    /// Package state as the carrier sees it.
    Package,
    /// Consistency of the card with its device's protect period.
    Protect,
}

impl TaskType {
    /// Every task type, in a fixed order.
    pub const ALL: [TaskType; 4] = [
        TaskType::Realname,
        TaskType::Carddata,
        TaskType::Package,
        TaskType::Protect,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskType::Realname => "realname",
            TaskType::Carddata => "carddata",
            TaskType::Package => "package",
            TaskType::Protect => "protect",
        }
    }

    /// Position in [`TaskType::ALL`], for per-type arrays.
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for TaskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not one of the four task types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown task type `{0}` (expected realname, carddata, package or protect)")]
pub struct ParseTaskTypeError(pub String);

impl FromStr for TaskType {
    type Err = ParseTaskTypeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| ParseTaskTypeError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_its_wire_name() {
        for t in TaskType::ALL {
            assert_eq!(t.as_str().parse::<TaskType>(), Ok(t));
            assert_eq!(serde_json::to_string(&t).ok(), Some(format!("\"{t}\"")));
        }
        assert!("Realname".parse::<TaskType>().is_err());
        assert_eq!(TaskType::Protect.index(), 3);
    }
}
