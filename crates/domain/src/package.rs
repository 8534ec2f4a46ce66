use crate::{CardId, DeviceId, Megabytes, PackageId, PackageUsageId};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// How a package's usage counter is reset.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResetCycle {
    None,
    Monthly,
}

/// Life of a bought package.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PackageStatus {
    /// Bought, not yet in force (queued, or waiting for real-name).
    Pending,
    Active,
    Expired,
    Cancelled,
}

str_enum!(ResetCycle { None => "none", Monthly => "monthly" });
str_enum!(PackageStatus {
    Pending => "pending",
    Active => "active",
    Expired => "expired",
    Cancelled => "cancelled",
});

/// A product that can be sold (`tb_package`).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Package {
    pub id: PackageId,
    #[serde(flatten)]
    pub spec: NewPackage,
}

/// A product to create, and the content of every stored one.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewPackage {
    pub name: String,
    /// `None`: unlimited.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "1024"))]
    pub data_limit_mb: Option<Megabytes>,
    /// Virtual megabytes charged per real megabyte (>= 1).
    pub virtual_ratio: Decimal,
    pub duration_days: i32,
    pub reset_cycle: ResetCycle,
}

/// Who a bought package covers: exactly one of a card or a device (the database enforces it).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "id")]
pub enum PackageOwner {
    Card(CardId),
    Device(DeviceId),
}

impl PackageOwner {
    /// The owner whose packages cover a card: its device when bound, else itself
    /// (`docs/rules.md`, "Stop / resume").
    pub fn covering(card_id: CardId, device_id: Option<DeviceId>) -> PackageOwner {
        match device_id {
            Some(d) => PackageOwner::Device(d),
            None => PackageOwner::Card(card_id),
        }
    }
}

/// A package bought for a card or a device (`tb_package_usage`): what was bought, with the id
/// and time the database keeps.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageUsage {
    pub id: PackageUsageId,
    #[serde(flatten)]
    pub spec: NewPackageUsage,
    pub created_at: DateTime<Utc>,
}

impl PackageUsage {
    /// Valid: active and `activated_at <= now < expires_at` (a missing bound is open).
    pub fn is_valid_at(&self, now: DateTime<Utc>) -> bool {
        let p = &self.spec;
        p.status == PackageStatus::Active
            && p.activated_at.is_none_or(|a| a <= now)
            && p.expires_at.is_none_or(|e| now < e)
    }

    /// Exhausted: `used_mb >= data_limit_mb`; an unlimited package never is.
    pub fn is_exhausted(&self) -> bool {
        let p = &self.spec;
        p.data_limit_mb.is_some_and(|limit| p.used_mb >= limit)
    }

    /// Room left in real megabytes (`None`: unlimited).
    pub fn room_real_mb(&self) -> Option<Megabytes> {
        let p = &self.spec;
        let ratio = effective_ratio(p.virtual_ratio);
        p.data_limit_mb
            .map(|limit| ((limit - p.used_mb) / ratio).max(Decimal::ZERO))
    }
}

/// A ratio below 1 (bad data) is treated as 1 so that deduction never divides by zero.
pub(crate) fn effective_ratio(r: Decimal) -> Decimal {
    if r < Decimal::ONE { Decimal::ONE } else { r }
}

/// A package bought for a card or device: a row to insert, and the content of every row.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewPackageUsage {
    pub owner: PackageOwner,
    pub package_id: Option<PackageId>,
    /// The carrier's identifier, when the carrier reports this package.
    pub external_id: Option<String>,
    pub status: PackageStatus,
    /// `None`: unlimited.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "1024"))]
    pub data_limit_mb: Option<Megabytes>,
    pub virtual_ratio: Decimal,
    /// Virtual megabytes used.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1024.5"))]
    pub used_mb: Megabytes,
    /// Stays pending until the card's first real-name verification.
    pub activate_on_realname: bool,
    pub activated_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub reset_cycle: ResetCycle,
    pub next_reset_at: Option<DateTime<Utc>>,
}

impl NewPackageUsage {
    /// An active package of `owner` from `activated_at` to `expires_at`, bought outside the
    /// catalog: no product, no carrier identifier, no reset. The package fixtures of tests and
    /// fuzz targets start from it and change what their case is about.
    pub fn active(
        owner: PackageOwner,
        data_limit_mb: Option<Megabytes>,
        virtual_ratio: Decimal,
        used_mb: Megabytes,
        activated_at: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Self {
        Self {
            owner,
            package_id: None,
            external_id: None,
            status: PackageStatus::Active,
            data_limit_mb,
            virtual_ratio,
            used_mb,
            activate_on_realname: false,
            activated_at: Some(activated_at),
            expires_at: Some(expires_at),
            reset_cycle: ResetCycle::None,
            next_reset_at: None,
        }
    }

    /// The row this package is once stored as `id` at `created_at`, for code that decides on
    /// packages without a store.
    pub fn stored(self, id: PackageUsageId, created_at: DateTime<Utc>) -> PackageUsage {
        PackageUsage {
            id,
            spec: self,
            created_at,
        }
    }
}

/// The carrier's view of one package, as the package poll reports it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarrierPackage {
    pub external_id: String,
    pub status: PackageStatus,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1024.5"))]
    pub used_mb: Megabytes,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "1024"))]
    pub limit_mb: Option<Megabytes>,
    pub activated_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl CarrierPackage {
    /// Whether writing this report into `owner`'s packages would change nothing: a package of
    /// `stored` with its `external_id` holds exactly the reported status, usage, limit and dates
    /// (the fields the carrier upsert writes; see `PackageStore::upsert_carrier_packages`).
    pub fn is_held_in(&self, stored: &[PackageUsage]) -> bool {
        stored.iter().any(|p| {
            let p = &p.spec;
            p.external_id.as_deref() == Some(self.external_id.as_str())
                && p.status == self.status
                && p.used_mb == self.used_mb
                && p.data_limit_mb == self.limit_mb
                && p.activated_at == self.activated_at
                && p.expires_at == self.expires_at
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};
    use rust_decimal_macros::dec;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 4, 2, 0, 0, 0)
            .single()
            .unwrap_or_default()
    }

    fn pkg(
        id: i64,
        limit: Option<Decimal>,
        ratio: Decimal,
        used: Decimal,
        days: i64,
    ) -> PackageUsage {
        let (bought, expires) = (now() - Duration::days(1), now() + Duration::days(days));
        let owner = PackageOwner::Card(CardId(1));
        NewPackageUsage::active(owner, limit, ratio, used, bought, expires)
            .stored(PackageUsageId(id), bought)
    }

    #[test]
    fn a_report_is_held_only_by_a_package_equal_in_every_written_field() {
        let mut stored = pkg(1, Some(dec!(100)), dec!(1), dec!(5.0), 30);
        stored.spec.external_id = Some("P-1".into());
        let report = CarrierPackage {
            external_id: "P-1".into(),
            status: PackageStatus::Active,
            used_mb: dec!(5),
            limit_mb: Some(dec!(100.00)),
            activated_at: stored.spec.activated_at,
            expires_at: stored.spec.expires_at,
        };
        let held = std::slice::from_ref(&stored);
        assert!(
            report.is_held_in(held),
            "5.0 and 5, 100 and 100.00 are the same numbers"
        );
        assert!(!report.is_held_in(&[]), "unknown: inserted");
        let changed = [
            CarrierPackage {
                external_id: "P-2".into(),
                ..report.clone()
            },
            CarrierPackage {
                status: PackageStatus::Expired,
                ..report.clone()
            },
            CarrierPackage {
                used_mb: dec!(5.5),
                ..report.clone()
            },
            CarrierPackage {
                limit_mb: None,
                ..report.clone()
            },
            CarrierPackage {
                activated_at: None,
                ..report.clone()
            },
            CarrierPackage {
                expires_at: stored.spec.expires_at.map(|e| e + Duration::seconds(1)),
                ..report.clone()
            },
        ];
        for c in changed {
            assert!(!c.is_held_in(held), "{c:?}");
        }
    }

    #[test]
    fn validity_window_is_half_open() {
        let mut p = pkg(1, Some(dec!(100)), dec!(1), dec!(0), 1);
        assert!(p.is_valid_at(now()));
        p.spec.expires_at = Some(now());
        assert!(!p.is_valid_at(now()), "expires_at is exclusive");
        p.spec.expires_at = None;
        p.spec.activated_at = Some(now() + Duration::seconds(1));
        assert!(!p.is_valid_at(now()), "a future package is not valid yet");
        p.spec.activated_at = Some(now());
        p.spec.status = PackageStatus::Pending;
        assert!(!p.is_valid_at(now()));
    }

    #[test]
    fn exhaustion_uses_virtual_megabytes() {
        assert!(pkg(1, Some(dec!(100)), dec!(1.25), dec!(100), 1).is_exhausted());
        assert!(!pkg(1, Some(dec!(100)), dec!(1.25), dec!(99.99), 1).is_exhausted());
        assert!(!pkg(1, None, dec!(1), dec!(1000000), 1).is_exhausted());
    }

    #[test]
    fn covering_owner_follows_the_binding() {
        assert_eq!(
            PackageOwner::covering(CardId(5), Some(DeviceId(9))),
            PackageOwner::Device(DeviceId(9))
        );
        assert_eq!(
            PackageOwner::covering(CardId(5), None),
            PackageOwner::Card(CardId(5))
        );
    }
}
