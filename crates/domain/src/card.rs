use crate::{CardId, CarrierId, DeviceId, Megabytes};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A two-state status stored as the integers `0`/`1` (in the table and on the wire).
macro_rules! zero_one_status {
    ($(#[$doc:meta])* $name:ident { $zero:ident, $one:ident }, $column:literal, $is_one:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(into = "i16", try_from = "i16")]
        pub enum $name {
            $zero = 0,
            $one = 1,
        }

        impl $name {
            pub fn $is_one(self) -> bool {
                self == $name::$one
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::Integer)
                    .enum_values(Some([0, 1]))
                    .description(Some(concat!("`", $column, "`: 0 or 1")))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}

        impl From<$name> for i16 {
            fn from(s: $name) -> i16 {
                s as i16
            }
        }

        impl TryFrom<i16> for $name {
            type Error = String;
            fn try_from(v: i16) -> Result<Self, String> {
                match v {
                    0 => Ok($name::$zero),
                    1 => Ok($name::$one),
                    other => Err(format!(concat!($column, " must be 0 or 1, got {}"), other)),
                }
            }
        }
    };
}

zero_one_status!(
    /// Whether the carrier lets the card on the network.
    NetworkStatus { Stopped, Online }, "network_status", is_online
);

zero_one_status!(
    /// Real-name (KYC) verification.
    RealNameStatus { NotVerified, Verified }, "real_name_status", is_verified
);

/// Industry (M2M) cards are exempt from real-name verification by the carriers.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CardCategory {
    Normal,
    Industry,
}

str_enum!(CardCategory { Normal => "normal", Industry => "industry" });

/// Why a card is stopped. Stored as its string; an online card has none (`''` in the table).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Not real-named and not an industry card.
    NotRealname,
    /// No valid package covers the card.
    NoPackage,
    /// Every valid package is used up.
    TrafficExhausted,
    /// Stopped by a device protect period.
    Protect,
    /// Stopped by an operator: automation never resumes it.
    Manual,
}

impl StopReason {
    pub const ALL: [StopReason; 5] = [
        StopReason::NotRealname,
        StopReason::NoPackage,
        StopReason::TrafficExhausted,
        StopReason::Protect,
        StopReason::Manual,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::NotRealname => "not_realname",
            StopReason::NoPackage => "no_package",
            StopReason::TrafficExhausted => "traffic_exhausted",
            StopReason::Protect => "protect",
            StopReason::Manual => "manual",
        }
    }

    /// Reasons set by the system itself; only these may be lifted by automation.
    pub const fn is_automatic(self) -> bool {
        !matches!(self, StopReason::Manual)
    }

    /// Parses the stored column: `''` is no reason.
    pub fn from_column(s: &str) -> Result<Option<StopReason>, String> {
        if s.is_empty() {
            return Ok(None);
        }
        s.parse().map(Some)
    }

    /// The stored column for an optional reason.
    pub fn to_column(reason: Option<StopReason>) -> &'static str {
        reason.map_or("", StopReason::as_str)
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StopReason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        StopReason::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown stop reason `{s}`"))
    }
}

/// One SIM card (`tb_iot_card`): what it was imported as (its carrier, category, status,
/// device and switch, changed since by polling and operators), with what the database keeps.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    pub id: CardId,
    #[serde(flatten)]
    pub facts: NewCard,
    pub stop_reason: Option<StopReason>,
    /// Lifetime usage: the sum of all deltas.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1024.5"))]
    pub data_usage_mb: Megabytes,
    #[serde(flatten)]
    pub usage: MonthCounters,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
}

/// The per-month usage counters kept on a card (`docs/rules.md`, "Month rollover").
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MonthCounters {
    /// First day of the month the counters belong to; `None` before the first poll.
    pub current_month_start_date: Option<NaiveDate>,
    /// Usage counted in that month.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1024.5"))]
    pub current_month_usage_mb: Megabytes,
    /// The last `month_total_mb` the carrier reported in that month: the delta baseline.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1024.5"))]
    pub last_gateway_total_mb: Megabytes,
    /// Final usage of the previous month (history).
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1024.5"))]
    pub last_month_total_mb: Megabytes,
    /// Megabytes of that month a carrier's push stream reported that its month total has not
    /// shown yet: counted once already, so a poll's rise of the total first pays them off
    /// (RULES-style prose at `domain::apply_month_total`). 0 without a stream.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "0"))]
    pub streamed_ahead_mb: Megabytes,
}

impl Card {
    /// Real-name is satisfied when verified, or for an industry card (carrier exemption).
    pub fn real_name_satisfied(&self) -> bool {
        let f = &self.facts;
        f.real_name_status.is_verified() || f.card_category == CardCategory::Industry
    }

    /// The fields config matching looks at.
    pub fn match_fields(&self) -> CardMatchFields {
        let f = &self.facts;
        CardMatchFields {
            id: self.id,
            carrier_id: f.carrier_id,
            card_category: f.card_category,
            real_name_status: f.real_name_status,
            network_status: f.network_status,
        }
    }

    /// Whether the card may be scheduled at all, given its device's switch (`None`: standalone
    /// card, or the device row is missing).
    pub fn polling_allowed(&self, device_enable_polling: Option<bool>) -> bool {
        self.deleted_at.is_none()
            && self.facts.enable_polling
            && device_enable_polling.unwrap_or(true)
    }

    /// The card's identity, with the polling switch of its device (`None`: standalone, or the
    /// device row is gone).
    pub fn identity(&self, device_enable_polling: Option<bool>) -> CardIdentity {
        let f = &self.facts;
        CardIdentity {
            id: self.id,
            iccid: f.iccid.clone(),
            carrier_id: f.carrier_id,
            card_category: f.card_category,
            device_id: f.device_id,
            polling_enabled: self.polling_allowed(device_enable_polling),
        }
    }
}

/// The facts of a card that change only through lifecycle events — import, binding and
/// unbinding, the polling switch of the card or of its device, deletion — each of which drops
/// the cached copy. This is all the card cache (`polling:card:{id}`) may hold. Usage counters,
/// real-name and network status change through polling itself, several polls of one card at
/// once: a cached copy of them is stale the moment another poll writes, and a stale usage
/// baseline once counted the same megabytes twice. Handlers take those facts from the row
/// their own write returns, or read them fresh under the card's lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardIdentity {
    pub id: CardId,
    pub iccid: String,
    pub carrier_id: CarrierId,
    pub card_category: CardCategory,
    /// `None`: a standalone card.
    pub device_id: Option<DeviceId>,
    /// The card's own switch and its device's, both on.
    pub polling_enabled: bool,
}

/// The slice of a card that `match_config` reads; what the initializer streams.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardMatchFields {
    pub id: CardId,
    pub carrier_id: CarrierId,
    pub card_category: CardCategory,
    pub real_name_status: RealNameStatus,
    pub network_status: NetworkStatus,
}

/// A card to insert (usage counters start at zero), and the facts of every stored card.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewCard {
    pub iccid: String,
    pub msisdn: Option<String>,
    pub carrier_id: CarrierId,
    pub card_category: CardCategory,
    /// Platform status code of the card's business lifecycle (owned by the platform, not
    /// interpreted by polling; a change triggers `on_card_status_changed`).
    pub status: i16,
    pub real_name_status: RealNameStatus,
    pub network_status: NetworkStatus,
    /// The card's own switch; polling also requires its device's switch.
    pub enable_polling: bool,
    /// `None`: a standalone card, covered by its own packages. `Some`: covered by the device's.
    pub device_id: Option<DeviceId>,
}

/// Filter for listing cards (API, manual trigger by filter).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CardFilter {
    pub device_id: Option<DeviceId>,
    pub carrier_id: Option<CarrierId>,
    pub network_status: Option<NetworkStatus>,
    pub card_category: Option<CardCategory>,
    pub iccid: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reason_column_round_trip() {
        assert_eq!(StopReason::from_column(""), Ok(None));
        for r in StopReason::ALL {
            assert_eq!(StopReason::from_column(r.as_str()), Ok(Some(r)));
            assert_eq!(StopReason::to_column(Some(r)), r.as_str());
        }
        assert!(StopReason::from_column("bogus").is_err());
        assert!(!StopReason::Manual.is_automatic());
        assert!(StopReason::Protect.is_automatic());
    }

    #[test]
    fn shard_routing_is_modulo() {
        assert_eq!(CardId(1000).shard(16), 8);
        assert_eq!(CardId(15).shard(16), 15);
        assert_eq!(CardId(16).shard(16), 0);
    }

    #[test]
    fn statuses_serialize_as_integers() {
        assert_eq!(
            serde_json::to_string(&NetworkStatus::Online)
                .ok()
                .as_deref(),
            Some("1")
        );
        assert_eq!(
            serde_json::from_str::<RealNameStatus>("0").ok(),
            Some(RealNameStatus::NotVerified)
        );
        assert!(serde_json::from_str::<NetworkStatus>("2").is_err());
    }
}
