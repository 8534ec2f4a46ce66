//! The products and the default polling configs a seeded fleet starts with.

use domain::store::{PackageStore, PollingConfigStore};
use domain::{CardCategory, CardCondition, Intervals, NewPackage, PollingConfigInput, ResetCycle};
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
    // Seconds between polls: realname, carddata, package, protect (`None`: not scheduled).
    // The demo profile polls more often, sized so that one worker node on a laptop keeps up
    // with 100,000 cards (about 500 polls a second in all).
    let [industry, not_realnamed, stopped, default] = if demo {
        [
            [None, Some(600), Some(1_800), Some(1_800)],
            [Some(300), Some(1_800), Some(1_800), None],
            [Some(1_800), Some(600), Some(120), Some(1_800)],
            [Some(3_600), Some(300), Some(1_800), Some(1_800)],
        ]
    } else {
        [
            [None, Some(600), Some(3_600), Some(3_600)],
            [Some(120), Some(1_800), Some(3_600), None],
            [Some(3_600), Some(600), Some(300), Some(1_800)],
            [Some(3_600), Some(300), Some(1_800), Some(1_800)],
        ]
    };
    let defs = [
        (
            "industry cards",
            10,
            None,
            Some(CardCategory::Industry),
            industry,
        ),
        (
            "not real-named",
            20,
            Some(CardCondition::NotRealname),
            None,
            not_realnamed,
        ),
        (
            "stopped cards",
            30,
            Some(CardCondition::Stopped),
            None,
            stopped,
        ),
        ("default", 100, None, None, default),
    ];
    for (name, priority, card_condition, card_category, iv) in defs {
        configs
            .insert(&PollingConfigInput {
                name: name.to_owned(),
                priority,
                enabled: true,
                card_condition,
                card_category,
                carrier_id: None,
                intervals: Intervals {
                    realname_interval_secs: iv[0],
                    carddata_interval_secs: iv[1],
                    package_interval_secs: iv[2],
                    protect_interval_secs: iv[3],
                },
            })
            .await?;
    }
    Ok(())
}
