//! `cmp-worker seed`: a realistic fleet for demos and benchmarks, written in bulk.
//!
//! Cards get ICCIDs, a mix of normal and industry cards, real-named and not, about a third
//! bound to devices (up to four cards a device), one package each (standalone cards) or per
//! device, some queued or waiting-for-real-name packages, and a default set of polling configs.
//! With `--gateway-url` the same cards are registered in `gateway-sim`.

use anyhow::Context;
use chrono::{Duration, Utc};
use clap::Args;
use domain::store::DeviceStore;
use domain::{
    CardCategory, CarrierId, CarrierPackage, DeviceId, NetworkStatus, NewCard, NewDevice,
    NewPackageUsage, PackageOwner, PackageStatus, RealNameStatus, ResetCycle,
};
use gateway_sim::{SimCardSpec, SimControl};
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rust_decimal::Decimal;
use settings::Settings;

mod catalog;

use catalog::{Products, seed_configs, seed_products};

#[derive(Args, Debug, Clone)]
pub(crate) struct SeedArgs {
    /// How many cards.
    #[arg(long)]
    pub(crate) cards: u64,
    /// How many devices (default: cards / 12).
    #[arg(long)]
    pub(crate) devices: Option<u64>,
    /// Rows per bulk insert.
    #[arg(long, default_value_t = 50_000)]
    pub(crate) batch: usize,
    /// Also register the cards in gateway-sim at this URL.
    #[arg(long)]
    pub(crate) gateway_url: Option<String>,
    /// Seed of the random choices (the same seed gives the same fleet).
    #[arg(long, default_value_t = 7)]
    pub(crate) seed: u64,
    /// Demo profile: intervals of seconds instead of minutes, and usage that exhausts some
    /// packages within a few minutes.
    #[arg(long)]
    pub(crate) demo: bool,
    /// ICCID prefix, so that several fleets can share a database.
    #[arg(long, default_value = "8986")]
    pub(crate) iccid_prefix: String,
    /// The cards are spread over carriers 1..=N (`just demo --carriers mixed` uses 6, one per
    /// protocol).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub(crate) carriers: u64,
}

pub(crate) async fn run(settings: &Settings, args: SeedArgs) -> anyhow::Result<()> {
    if args.cards == 0 || args.batch == 0 {
        anyhow::bail!("--cards and --batch must be positive");
    }
    let db = ops::connect_database(settings).await?;
    let stores = store::Stores::new(db);
    let sim = match &args.gateway_url {
        Some(url) => Some(SimControl::new(url.clone()).context("--gateway-url")?),
        None => None,
    };
    let started = std::time::Instant::now();
    seed_configs(stores.configs.as_ref(), args.demo).await?;
    let products = seed_products(stores.packages.as_ref()).await?;

    let device_count = args.devices.unwrap_or(args.cards / 12);
    let devices = seed_devices(
        stores.devices.as_ref(),
        device_count,
        args.batch,
        &args.iccid_prefix,
    )
    .await?;

    let bar = ProgressBar::new(args.cards);
    bar.set_style(
        ProgressStyle::with_template("{spinner} cards {pos}/{len} [{bar:40}] {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut next = 0u64;
    while next < args.cards {
        let n = (args.cards - next).min(args.batch as u64);
        let fleet = generate(&mut rng, next, n, &devices, &args);
        let ids = stores
            .cards
            .insert_bulk(&fleet.cards)
            .await
            .context("insert cards")?;
        let mut usages = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            let card = &fleet.cards[i];
            if card.device_id.is_none() {
                let fast = fleet.fast[i];
                usages.extend(packages_for(
                    &mut rng,
                    PackageOwner::Card(*id),
                    card,
                    &products,
                    fast,
                ));
            }
        }
        stores
            .packages
            .create_usages_bulk(&usages)
            .await
            .context("insert packages")?;
        if let Some(sim) = &sim {
            sim.put_cards(&fleet.sim_cards)
                .await
                .context("register cards in gateway-sim")?;
        }
        next += n;
        bar.set_position(next);
    }
    bar.finish();
    // One package per device, covering its bound cards (`docs/rules.md`, "Stop / resume":
    // a bound card is covered by its device's packages).
    let device_usages: Vec<NewPackageUsage> = devices
        .iter()
        .flat_map(|d| {
            let fast = args.demo && d.get() % 10 == 0;
            packages_for(
                &mut rng,
                PackageOwner::Device(*d),
                &placeholder_card(),
                &products,
                fast,
            )
        })
        .collect();
    for chunk in device_usages.chunks(args.batch) {
        stores
            .packages
            .create_usages_bulk(chunk)
            .await
            .context("insert device packages")?;
    }
    tracing::info!(
        cards = args.cards,
        devices = devices.len(),
        secs = started.elapsed().as_secs_f64(),
        "fleet seeded"
    );
    println!(
        "seeded {} cards and {} devices in {:.1}s",
        args.cards,
        devices.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn seed_devices(
    devices: &dyn DeviceStore,
    n: u64,
    batch: usize,
    prefix: &str,
) -> anyhow::Result<Vec<DeviceId>> {
    let mut ids = Vec::with_capacity(n as usize);
    let all: Vec<NewDevice> = (0..n)
        .map(|i| NewDevice {
            device_no: format!("DEV{prefix}{i:010}"),
            enable_polling: i % 97 != 0,
        })
        .collect();
    for chunk in all.chunks(batch) {
        ids.extend(devices.insert_bulk(chunk).await.context("insert devices")?);
    }
    Ok(ids)
}

struct Generated {
    cards: Vec<NewCard>,
    sim_cards: Vec<SimCardSpec>,
    /// Demo only: the card burns through its package in about a minute.
    fast: Vec<bool>,
}

fn generate(
    rng: &mut StdRng,
    from: u64,
    n: u64,
    devices: &[DeviceId],
    args: &SeedArgs,
) -> Generated {
    let mut cards = Vec::with_capacity(n as usize);
    let mut fast = Vec::with_capacity(n as usize);
    let mut sim_cards = Vec::with_capacity(if args.gateway_url.is_some() {
        n as usize
    } else {
        0
    });
    for i in from..from + n {
        let iccid = format!("{}{:016}", args.iccid_prefix, i);
        let industry = rng.random_bool(0.1);
        let is_fast = args.demo && i % 10 == 0;
        fast.push(is_fast);
        let real_named = rng.random_bool(0.85);
        // About a third of the cards sit on devices, up to four a device.
        let device_id = if !devices.is_empty() && (i % 3 == 0) {
            devices
                .get(((i / 3) % (devices.len() as u64 * 4) / 4) as usize)
                .copied()
        } else {
            None
        };
        cards.push(NewCard {
            iccid: iccid.clone(),
            msisdn: Some(format!("1{:010}", i % 10_000_000_000)),
            carrier_id: CarrierId(1 + (i % args.carriers) as i64),
            card_category: if industry {
                CardCategory::Industry
            } else {
                CardCategory::Normal
            },
            status: 1,
            real_name_status: if real_named {
                RealNameStatus::Verified
            } else {
                RealNameStatus::NotVerified
            },
            network_status: NetworkStatus::Online,
            enable_polling: rng.random_bool(0.99),
            device_id,
        });
        if args.gateway_url.is_some() {
            let mut spec = SimCardSpec::new(iccid);
            // The carrier's view: most cards verify eventually; usage grows by a few MB a poll,
            // and in the demo a tenth of them grow fast enough to exhaust a package in a poll or two.
            spec.real_name_status = if real_named || rng.random_bool(0.5) {
                RealNameStatus::Verified
            } else {
                RealNameStatus::NotVerified
            };
            let growth = if is_fast {
                150
            } else {
                rng.random_range(0..=4)
            };
            spec.growth_mb_per_query = Some(Decimal::from(growth));
            spec.packages = Vec::<CarrierPackage>::new();
            sim_cards.push(spec);
        }
    }
    Generated {
        cards,
        sim_cards,
        fast,
    }
}

/// A stand-in for the device's owner, to reuse the package mix.
fn placeholder_card() -> NewCard {
    NewCard {
        iccid: String::new(),
        msisdn: None,
        carrier_id: CarrierId(1),
        card_category: CardCategory::Normal,
        status: 1,
        real_name_status: RealNameStatus::Verified,
        network_status: NetworkStatus::Online,
        enable_polling: true,
        device_id: None,
    }
}

fn packages_for(
    rng: &mut StdRng,
    owner: PackageOwner,
    card: &NewCard,
    products: &Products,
    fast: bool,
) -> Vec<NewPackageUsage> {
    let now = Utc::now();
    let pick = rng.random_range(0..10u8);
    let (product, pid) = match pick {
        0..=5 => (&products.monthly_1g, products.ids[0]),
        6..=8 => (&products.ratio_500m, products.ids[1]),
        _ => (&products.unlimited, products.ids[2]),
    };
    let started = now - Duration::days(rng.random_range(0..20));
    let expires = if fast {
        // Demo: the package runs out within minutes; the queued renewal then takes over.
        now + Duration::seconds(rng.random_range(60..240))
    } else {
        started + Duration::days(i64::from(product.duration_days))
    };
    let limit = product.data_limit_mb;
    let mut out = vec![NewPackageUsage {
        owner,
        package_id: Some(pid),
        external_id: None,
        status: PackageStatus::Active,
        data_limit_mb: limit,
        virtual_ratio: product.virtual_ratio,
        used_mb: limit.map_or(Decimal::ZERO, |l| {
            l * Decimal::from(rng.random_range(0..90u32)) / Decimal::from(100)
        }),
        activate_on_realname: false,
        activated_at: Some(started),
        expires_at: Some(expires),
        reset_cycle: product.reset_cycle,
        next_reset_at: (product.reset_cycle == ResetCycle::Monthly)
            .then(|| started + Duration::days(30)),
    }];
    // Renewals queued behind the active package.
    if fast || rng.random_bool(0.05) {
        let mut renewal = out[0].clone();
        renewal.status = PackageStatus::Pending;
        renewal.used_mb = Decimal::ZERO;
        renewal.activated_at = None;
        renewal.expires_at = None;
        out.push(renewal);
    }
    // Not real-named cards often hold a package waiting for their first verification.
    if !card.real_name_status.is_verified() && rng.random_bool(0.5) {
        let mut waiting = out[0].clone();
        waiting.status = PackageStatus::Pending;
        waiting.used_mb = Decimal::ZERO;
        waiting.activate_on_realname = true;
        waiting.activated_at = None;
        waiting.expires_at = None;
        out.push(waiting);
    }
    out
}
