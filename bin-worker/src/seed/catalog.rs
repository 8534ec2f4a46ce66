//! The products and the default polling configs a seeded fleet starts with.

use domain::store::{PackageStore, PollingConfigStore};
use domain::{NewPackage, ResetCycle};
use rust_decimal::Decimal;

pub(super) struct Products {
    pub(super) monthly_1g: NewPackage,
    pub(super) ratio_500m: NewPackage,
    pub(super) unlimited: NewPackage,
    pub(super) ids: [domain::PackageId; 3],
}

pub(super) async fn seed_products(packages: &dyn PackageStore) -> anyhow::Result<Products> {
    let monthly_1g = NewPackage {
        name: "1 GB monthly".to_owned(),
        data_limit_mb: Some(Decimal::from(1024)),
        virtual_ratio: Decimal::ONE,
        duration_days: 365,
        reset_cycle: ResetCycle::Monthly,
    };
    let ratio_500m = NewPackage {
        name: "500 MB, virtual ratio 1.25".to_owned(),
        data_limit_mb: Some(Decimal::from(500)),
        virtual_ratio: Decimal::new(125, 2),
        duration_days: 30,
        reset_cycle: ResetCycle::None,
    };
    let unlimited = NewPackage {
        name: "Unlimited".to_owned(),
        data_limit_mb: None,
        virtual_ratio: Decimal::ONE,
        duration_days: 30,
        reset_cycle: ResetCycle::None,
    };
    let a = packages.create_package(&monthly_1g).await?.id;
    let b = packages.create_package(&ratio_500m).await?.id;
    let c = packages.create_package(&unlimited).await?.id;
    Ok(Products {
        monthly_1g,
        ratio_500m,
        unlimited,
        ids: [a, b, c],
    })
}

pub(super) async fn seed_configs(
    configs: &dyn PollingConfigStore,
    demo: bool,
) -> anyhow::Result<()> {
    if !configs.list_all().await?.is_empty() {
        tracing::info!("polling configs exist; left as they are");
        return Ok(());
    }
    for config in polling_config::default_configs(demo) {
        configs.insert(&config).await?;
    }
    Ok(())
}
