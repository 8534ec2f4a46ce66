use chrono::{DateTime, SubsecRound, Utc};
use domain::{
    CardCategory, CarrierId, DeviceId, NetworkStatus, NewCard, NewPackageUsage, PackageOwner,
    PackageStatus, RealNameStatus, ResetCycle,
};
use rust_decimal::Decimal;
use store::Stores;
use test_support::TestDb;

/// A fresh database and the stores over it.
pub(crate) async fn setup() -> anyhow::Result<(TestDb, Stores)> {
    let db = TestDb::new().await?;
    let stores = Stores::new(db.conn.clone());
    Ok((db, stores))
}

/// Now, at PostgreSQL's precision (microseconds), so round trips compare equal.
pub(crate) fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

pub(crate) fn new_card(iccid: &str) -> NewCard {
    NewCard {
        iccid: iccid.to_owned(),
        msisdn: None,
        carrier_id: CarrierId(1),
        card_category: CardCategory::Normal,
        status: 1,
        real_name_status: RealNameStatus::NotVerified,
        network_status: NetworkStatus::Online,
        enable_polling: true,
        device_id: None,
    }
}

pub(crate) fn bound_card(iccid: &str, device: DeviceId) -> NewCard {
    NewCard {
        device_id: Some(device),
        ..new_card(iccid)
    }
}

/// An active package of `owner` from `activated` to `expires`.
pub(crate) fn active_usage(
    owner: PackageOwner,
    limit: Option<Decimal>,
    ratio: Decimal,
    used: Decimal,
    activated: DateTime<Utc>,
    expires: DateTime<Utc>,
) -> NewPackageUsage {
    NewPackageUsage::active(owner, limit, ratio, used, activated, expires)
}

/// A pending package of `owner` (no window yet).
pub(crate) fn pending_usage(owner: PackageOwner, on_realname: bool) -> NewPackageUsage {
    NewPackageUsage {
        owner,
        package_id: None,
        external_id: None,
        status: PackageStatus::Pending,
        data_limit_mb: Some(Decimal::from(1024)),
        virtual_ratio: Decimal::ONE,
        used_mb: Decimal::ZERO,
        activate_on_realname: on_realname,
        activated_at: None,
        expires_at: None,
        reset_cycle: ResetCycle::None,
        next_reset_at: None,
    }
}
