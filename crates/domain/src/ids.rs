//! Typed identifiers. A `CardId` cannot be passed where a `DeviceId` is expected.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl $name {
            /// The raw database key.
            pub const fn get(self) -> i64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = std::num::ParseIntError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                s.parse().map($name)
            }
        }

        impl From<i64> for $name {
            fn from(v: i64) -> Self {
                $name(v)
            }
        }
    };
}

id_type!(
    /// `tb_iot_card.id`; also the member of every queue sorted set (decimal).
    CardId
);
id_type!(
    /// `tb_device.id`.
    DeviceId
);
id_type!(
    /// `tb_package.id` (a product that can be sold).
    PackageId
);
id_type!(
    /// `tb_package_usage.id` (a package bought for one card or one device).
    PackageUsageId
);
id_type!(
    /// `tb_polling_config.id`.
    PollingConfigId
);
id_type!(
    /// The carrier (operator network) a card belongs to.
    CarrierId
);
id_type!(
    /// `tb_polling_alert_rule.id`.
    AlertRuleId
);
id_type!(
    /// `tb_data_cleanup_config.id`.
    CleanupConfigId
);
id_type!(
    /// `tb_api_key.id`.
    ApiKeyId
);

impl CardId {
    /// The queue shard of this card: `card_id % shard_count` (`docs/contract.md`,
    /// "Redis keys"). Both processes must agree on it, so it is computed here and nowhere else.
    pub fn shard(self, shard_count: u32) -> u32 {
        // rem_euclid keeps a (never expected) negative id on a valid shard.
        self.0.rem_euclid(i64::from(shard_count.max(1))) as u32
    }
}
