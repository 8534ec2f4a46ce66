//! A world per test: a fresh database and Redis prefix (test-support), the real stores, an
//! in-process gateway-sim and the service wired as production wires it.
#![allow(dead_code, unreachable_pub)]

use chrono::{DateTime, Duration, Utc};
use domain::store::Page;
use domain::{
    Card, CardCategory, CardId, CardStateLog, CarrierId, DeviceId, ManualClock, Megabytes,
    NetworkStatus, NewCard, NewDevice, NewPackageUsage, PackageOwner, PackageStatus, PackageUsage,
    RealNameStatus, ResetCycle,
};
use gateway::{GatewayConfig, HttpGateway, RetryPolicy};
use gateway_sim::{SimCardSpec, SimHandle, SimOptions, SimServer};
use polling_queue::{CardLock, Keys, ProtectKeys};
use rust_decimal::Decimal;
use std::sync::Arc;
use stop_resume::{StopResumeService, StopResumeSettings};
use store::Stores;
use test_support::TestEnv;

pub struct World {
    pub env: TestEnv,
    pub stores: Stores,
    pub sim: SimHandle,
    pub clock: ManualClock,
    pub keys: Keys,
    pub protect: ProtectKeys,
    pub service: StopResumeService,
}

/// A client with short back-offs so that retry tests stay fast.
pub fn gateway(sim: &SimHandle) -> HttpGateway {
    let config = GatewayConfig {
        timeout: std::time::Duration::from_secs(2),
        retry: RetryPolicy {
            base_delay: std::time::Duration::from_millis(10),
            max_delay: std::time::Duration::from_millis(40),
            ..RetryPolicy::default()
        },
        ..GatewayConfig::new(sim.url())
    };
    HttpGateway::new(config, None).expect("gateway client builds")
}

impl World {
    pub async fn new() -> World {
        let env = TestEnv::new().await.expect("test env");
        let stores = Stores::new(env.db.conn.clone());
        let sim = SimServer::start(SimOptions::default())
            .await
            .expect("sim starts");
        let clock = ManualClock::new(Utc::now());
        let keys = Keys::new(env.redis.prefix.clone());
        let pool = env.redis.pool().await.expect("redis pool");
        let protect = ProtectKeys::new(pool.clone(), keys.clone());
        let service = World::service_on(&stores, &sim, &clock, &keys, pool);
        World {
            env,
            stores,
            sim,
            clock,
            keys,
            protect,
            service,
        }
    }

    /// Another service over the same world, with its own Redis pool and HTTP client: what a
    /// second worker process would run.
    pub async fn another_service(&self) -> StopResumeService {
        let pool = self.env.redis.pool().await.expect("redis pool");
        World::service_on(&self.stores, &self.sim, &self.clock, &self.keys, pool)
    }

    /// Another service over the same world with other settings (lock TTL, waits).
    pub async fn service_with(&self, settings: StopResumeSettings) -> StopResumeService {
        let pool = self.env.redis.pool().await.expect("redis pool");
        StopResumeService::new(
            self.stores.cards.clone(),
            self.stores.packages.clone(),
            Arc::new(gateway(&self.sim)),
            ProtectKeys::new(pool.clone(), self.keys.clone()),
            CardLock::new(pool, self.keys.clone()),
            Arc::new(self.clock.clone()),
            settings,
        )
    }

    fn service_on(
        stores: &Stores,
        sim: &SimHandle,
        clock: &ManualClock,
        keys: &Keys,
        pool: fred::clients::Pool,
    ) -> StopResumeService {
        StopResumeService::new(
            stores.cards.clone(),
            stores.packages.clone(),
            Arc::new(gateway(sim)),
            ProtectKeys::new(pool.clone(), keys.clone()),
            CardLock::new(pool, keys.clone()),
            Arc::new(clock.clone()),
            StopResumeSettings::default(),
        )
    }

    pub fn now(&self) -> DateTime<Utc> {
        domain::Clock::now(&self.clock)
    }

    /// A normal card, real-named, online, known to the sim.
    pub async fn card(&self, iccid: &str, device: Option<DeviceId>) -> CardId {
        self.card_with(
            iccid,
            device,
            RealNameStatus::Verified,
            NetworkStatus::Online,
        )
        .await
    }

    pub async fn card_with(
        &self,
        iccid: &str,
        device: Option<DeviceId>,
        real: RealNameStatus,
        net: NetworkStatus,
    ) -> CardId {
        let card = self
            .stores
            .cards
            .insert(&NewCard {
                iccid: iccid.to_owned(),
                msisdn: None,
                carrier_id: CarrierId(1),
                card_category: CardCategory::Normal,
                status: 1,
                real_name_status: real,
                network_status: net,
                enable_polling: true,
                device_id: device,
            })
            .await
            .expect("card inserts");
        let spec = SimCardSpec {
            real_name_status: real,
            network_status: net,
            ..SimCardSpec::new(iccid)
        };
        self.sim.state().upsert_cards(vec![spec]).expect("sim card");
        card.id
    }

    pub async fn device(&self, no: &str) -> DeviceId {
        let d = NewDevice {
            device_no: no.to_owned(),
            enable_polling: true,
        };
        self.stores
            .devices
            .insert(&d)
            .await
            .expect("device inserts")
            .id
    }

    /// An active package valid from a day ago for `days` days.
    pub async fn package(
        &self,
        owner: PackageOwner,
        limit: Option<Megabytes>,
        ratio: Decimal,
        used: Megabytes,
        days: i64,
    ) -> PackageUsage {
        let now = self.now();
        self.stores
            .packages
            .create_usage(&NewPackageUsage {
                owner,
                package_id: None,
                external_id: None,
                status: PackageStatus::Active,
                data_limit_mb: limit,
                virtual_ratio: ratio,
                used_mb: used,
                activate_on_realname: false,
                activated_at: Some(now - Duration::days(1)),
                expires_at: Some(now + Duration::days(days)),
                reset_cycle: ResetCycle::None,
                next_reset_at: None,
            })
            .await
            .expect("package inserts")
    }

    pub async fn db_card(&self, id: CardId) -> Card {
        self.stores
            .cards
            .get(id)
            .await
            .expect("card reads")
            .expect("card exists")
    }

    /// The card's audit rows, oldest first.
    pub async fn log(&self, id: CardId) -> Vec<CardStateLog> {
        let mut rows = self
            .stores
            .cards
            .state_log(id, Page::new(1, 500))
            .await
            .expect("log reads")
            .items;
        rows.reverse();
        rows
    }

    /// `(stop_calls, start_calls)` the sim saw for the card.
    pub fn calls(&self, iccid: &str) -> (u32, u32) {
        let v = self.sim.state().card(iccid).expect("sim card");
        (v.stop_calls, v.start_calls)
    }
}
