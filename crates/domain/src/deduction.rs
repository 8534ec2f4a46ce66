//! Usage deduction (`docs/rules.md`, "Usage deduction"): how a usage delta is charged to a card's
//! valid packages.

use crate::package::effective_ratio;
use crate::{Megabytes, PackageUsage, PackageUsageId};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

/// One step of a deduction: add `add_virtual_mb` to package `id`'s `used_mb`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeductionStep {
    pub id: PackageUsageId,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1024.5"))]
    pub add_virtual_mb: Megabytes,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1024.5"))]
    pub real_mb: Megabytes,
}

/// Real megabytes in virtual ones. Saturates instead of panicking on a figure no card can
/// reach (a carrier answering 7e28 MB: the gateway client refuses such answers; this keeps the
/// rule total for any input).
fn virtual_mb(real_mb: Megabytes, ratio: Decimal) -> Megabytes {
    real_mb.checked_mul(ratio).unwrap_or(Decimal::MAX)
}

/// Plans `deduct_data_usage` (`docs/rules.md`, "Usage deduction"): valid packages ordered by
/// `expires_at` then `id`; each takes `min(room, remaining)` real MB, charged at its ratio; what is
/// left after the last package lands on the last one (overage is recorded, not dropped). An
/// unlimited package takes everything. Returns no step when no package is valid or the delta is not
/// positive.
pub fn plan_deduction(
    packages: &[PackageUsage],
    delta_real_mb: Megabytes,
    now: DateTime<Utc>,
) -> Vec<DeductionStep> {
    if delta_real_mb <= Decimal::ZERO {
        return Vec::new();
    }
    let mut valid: Vec<&PackageUsage> = packages.iter().filter(|p| p.is_valid_at(now)).collect();
    valid.sort_by_key(|p| (p.spec.expires_at.is_none(), p.spec.expires_at, p.id));
    let mut steps: Vec<DeductionStep> = Vec::new();
    let mut remaining = delta_real_mb;
    for p in &valid {
        if remaining <= Decimal::ZERO {
            break;
        }
        let take = match p.room_real_mb() {
            None => remaining,
            Some(room) => room.min(remaining),
        };
        if take > Decimal::ZERO {
            steps.push(DeductionStep {
                id: p.id,
                add_virtual_mb: virtual_mb(take, effective_ratio(p.spec.virtual_ratio)),
                real_mb: take,
            });
            remaining -= take;
        }
    }
    if remaining > Decimal::ZERO
        && let Some(last) = valid.last()
    {
        let ratio = effective_ratio(last.spec.virtual_ratio);
        match steps.last_mut().filter(|s| s.id == last.id) {
            Some(step) => {
                step.add_virtual_mb = step
                    .add_virtual_mb
                    .saturating_add(virtual_mb(remaining, ratio));
                step.real_mb += remaining;
            }
            None => steps.push(DeductionStep {
                id: last.id,
                add_virtual_mb: virtual_mb(remaining, ratio),
                real_mb: remaining,
            }),
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CardId, NewPackageUsage, PackageOwner, PackageStatus};
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
    fn deduction_consumes_in_expiry_order_and_puts_overage_on_the_last() {
        // Expires later but lower id: must come second.
        let a = pkg(1, Some(dec!(100)), dec!(1.0), dec!(90), 10);
        // Expires first: 50 virtual left at ratio 1.25 = 40 real.
        let b = pkg(2, Some(dec!(100)), dec!(1.25), dec!(50), 5);
        let steps = plan_deduction(&[a, b], dec!(60), now());
        assert_eq!(
            steps,
            vec![
                DeductionStep {
                    id: PackageUsageId(2),
                    add_virtual_mb: dec!(50.00),
                    real_mb: dec!(40)
                },
                DeductionStep {
                    id: PackageUsageId(1),
                    add_virtual_mb: dec!(20.0),
                    real_mb: dec!(20)
                },
            ]
        );
        let total: Decimal = steps.iter().map(|s| s.real_mb).sum();
        assert_eq!(total, dec!(60));
    }

    #[test]
    fn a_delta_no_card_can_reach_saturates_instead_of_panicking() {
        // Found by the fuzz target `gateway_answers`: 7e28 MB at a ratio of 1.25 overflowed.
        let a = pkg(1, Some(dec!(10)), dec!(1.25), dec!(0), 1);
        let steps = plan_deduction(&[a], Decimal::MAX, now());
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].add_virtual_mb, Decimal::MAX);
    }

    #[test]
    fn overage_lands_on_the_last_package() {
        let a = pkg(1, Some(dec!(10)), dec!(1), dec!(0), 1);
        let b = pkg(2, Some(dec!(10)), dec!(2), dec!(0), 2);
        let steps = plan_deduction(&[a, b], dec!(30), now());
        // a takes 10; b has room 5 real; the last 15 real land on b too.
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[1].real_mb, dec!(20));
        assert_eq!(steps[1].add_virtual_mb, dec!(40));
        assert_eq!(steps.iter().map(|s| s.real_mb).sum::<Decimal>(), dec!(30));
    }

    #[test]
    fn unlimited_takes_everything_and_nothing_valid_means_no_step() {
        let u = pkg(3, None, dec!(1), dec!(0), 1);
        let steps = plan_deduction(std::slice::from_ref(&u), dec!(7), now());
        assert_eq!(
            steps,
            vec![DeductionStep {
                id: PackageUsageId(3),
                add_virtual_mb: dec!(7),
                real_mb: dec!(7)
            }]
        );
        let mut expired = u;
        expired.spec.status = PackageStatus::Expired;
        assert!(plan_deduction(&[expired], dec!(7), now()).is_empty());
        assert!(plan_deduction(&[], dec!(0), now()).is_empty());
    }
}
