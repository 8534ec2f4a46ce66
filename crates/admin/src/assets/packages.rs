//! Packages: products (`POST /packages`) and purchases (`POST /package-usages`). A purchase for
//! an owner with no valid package is activated at once, so the card resumes without waiting for
//! the next activation check; every card it covers is re-evaluated.

use crate::error::{Checks, StoreResultExt};
use crate::{Admin, AdminError, Evaluation};
use chrono::{Duration, Months};
use domain::{
    CardId, DeviceId, NewPackage, NewPackageUsage, Package, PackageId, PackageOwner, PackageStatus,
    PackageUsage, ResetCycle,
};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use stop_resume::Trigger;

/// A product to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageBody {
    pub name: String,
    /// Megabytes sold (a decimal string); `null`: unlimited.
    #[serde(default)]
    pub data_limit_mb: Option<Decimal>,
    /// Virtual megabytes charged per real megabyte, at least 1 (default 1).
    #[serde(default = "one")]
    pub virtual_ratio: Decimal,
    /// 1 to 3660 days.
    pub duration_days: i32,
    #[serde(default = "no_reset")]
    pub reset_cycle: ResetCycle,
}

fn one() -> Decimal {
    Decimal::ONE
}
fn no_reset() -> ResetCycle {
    ResetCycle::None
}

/// A purchase of a product for a card or a device (exactly one of the two).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageUsageBody {
    #[serde(default)]
    pub card_id: Option<CardId>,
    #[serde(default)]
    pub device_id: Option<DeviceId>,
    pub package_id: PackageId,
    /// The carrier's identifier of the package, if it reports one.
    #[serde(default)]
    pub external_id: Option<String>,
    /// Stay pending until the card's first real-name verification.
    #[serde(default)]
    pub activate_on_realname: bool,
}

/// A purchase and the decisions taken on the cards it covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageUsageOutcome {
    pub usage: PackageUsage,
    /// Whether it was activated at once (the owner had no valid package).
    pub activated: bool,
    pub evaluations: Vec<Evaluation>,
}

impl Admin {
    pub async fn create_package(&self, body: &PackageBody) -> Result<Package, AdminError> {
        let mut checks = Checks::default();
        checks.text(&body.name, "/name", 128);
        if let Some(l) = body.data_limit_mb {
            checks.check(l >= Decimal::ZERO, "/data_limit_mb", "must not be negative");
        }
        checks.check(
            body.virtual_ratio >= Decimal::ONE && body.virtual_ratio <= Decimal::from(1000),
            "/virtual_ratio",
            "must be between 1 and 1000",
        );
        checks.check(
            (1..=3660).contains(&body.duration_days),
            "/duration_days",
            "must be between 1 and 3660",
        );
        checks.finish()?;
        self.stores
            .packages
            .create_package(&NewPackage {
                name: body.name.trim().to_owned(),
                data_limit_mb: body.data_limit_mb,
                virtual_ratio: body.virtual_ratio,
                duration_days: body.duration_days,
                reset_cycle: body.reset_cycle,
            })
            .await
            .admin()
    }

    pub async fn create_package_usage(
        &self,
        body: &PackageUsageBody,
    ) -> Result<PackageUsageOutcome, AdminError> {
        let owner = match (body.card_id, body.device_id) {
            (Some(c), None) => PackageOwner::Card(c),
            (None, Some(d)) => PackageOwner::Device(d),
            _ => {
                return Err(AdminError::invalid(
                    "/card_id",
                    "give exactly one of card_id and device_id",
                ));
            }
        };
        if let Some(e) = &body.external_id
            && (e.is_empty() || e.chars().count() > 64)
        {
            return Err(AdminError::invalid(
                "/external_id",
                "must be 1 to 64 characters",
            ));
        }
        let covered = match owner {
            PackageOwner::Card(c) => {
                self.card(c).await.map_err(|_| {
                    AdminError::invalid("/card_id", format!("card {c} does not exist"))
                })?;
                vec![c]
            }
            PackageOwner::Device(d) => {
                self.device(d).await.map_err(|_| {
                    AdminError::invalid("/device_id", format!("device {d} does not exist"))
                })?;
                self.stores.cards.ids_of_devices(&[d]).await.admin()?
            }
        };
        let product = self
            .stores
            .packages
            .get_package(body.package_id)
            .await
            .admin()?
            .ok_or_else(|| {
                AdminError::invalid(
                    "/package_id",
                    format!("package {} does not exist", body.package_id),
                )
            })?;
        let now = self.clock.now();
        let has_valid = self
            .stores
            .packages
            .usages_of(owner)
            .await
            .admin()?
            .iter()
            .any(|u| u.is_valid_at(now));
        let activate = !has_valid && !body.activate_on_realname;
        let usage = NewPackageUsage {
            owner,
            package_id: Some(product.id),
            external_id: body.external_id.clone(),
            status: if activate {
                PackageStatus::Active
            } else {
                PackageStatus::Pending
            },
            data_limit_mb: product.spec.data_limit_mb,
            virtual_ratio: product.spec.virtual_ratio,
            used_mb: Decimal::ZERO,
            activate_on_realname: body.activate_on_realname,
            activated_at: activate.then_some(now),
            expires_at: activate
                .then(|| now + Duration::days(i64::from(product.spec.duration_days))),
            reset_cycle: product.spec.reset_cycle,
            next_reset_at: (activate && product.spec.reset_cycle == ResetCycle::Monthly)
                .then(|| now.checked_add_months(Months::new(1)))
                .flatten(),
        };
        let usage = self.stores.packages.create_usage(&usage).await.admin()?;
        let mut evaluations = Vec::new();
        if activate {
            for card in covered {
                evaluations.push(self.reevaluate(card, Trigger::PackageActivation).await);
            }
        }
        Ok(PackageUsageOutcome {
            usage,
            activated: activate,
            evaluations,
        })
    }
}
