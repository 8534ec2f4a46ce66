//! A world per test: a fresh PostgreSQL database and Redis prefix (test-support), the real
//! stores, an in-process gateway-sim on the same manual clock, and the handlers built exactly as
//! the worker builds them (`build_registry`).
//!
//! The seed's card ids (100, 200, 300) are inserted with those explicit ids by SQL; the test
//! database is the test's own, so nothing else competes for them.
#![allow(dead_code, unreachable_pub)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use domain::store::Page;
use domain::{
    Card, CardId, CardStateLog, CarrierPackage, DeviceId, Intervals, ManualClock, Megabytes,
    NetworkStatus, NewDevice, NewPackageUsage, PackageOwner, PackageUsage, PollingConfigInput,
    RealNameStatus, StopReason, TaskType,
};
use domain::{CarrierAccount, CarrierId, CarrierLimits, CarrierProtocol, Credentials};
use fred::clients::Pool;
use gateway::carriers::{AdapterContext, CarrierRouter};
use gateway::{GatewayConfig, HttpGateway, RetryPolicy};
use gateway_sim::{SimCardSpec, SimHandle, SimOptions, SimServer};
use polling_config::PollingConfigManager;
use polling_queue::{
    CardCache, CardLock, ConcurrencySemaphore, Keys, PollingQueueManager, ProtectKeys,
    QueueSettings, SemaphoreSettings, TaskCounters, to_score,
};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbBackend, Statement, Value};
use std::sync::Arc;
use stop_resume::{StopResumeService, StopResumeSettings};
use store::Stores;
use task_handlers::{HandlerDeps, HandlerSettings, Outcome, Registry, build_registry};
use test_support::TestEnv;

/// Intervals of the one polling config every world starts with.
pub const REALNAME_SECS: i64 = 600;
pub const CARDDATA_SECS: i64 = 300;
pub const PACKAGE_SECS: i64 = 3600;
pub const PROTECT_SECS: i64 = 120;
/// `CMP_RETRY_INTERVAL_SECS` of the world.
pub const RETRY_SECS: i64 = 60;
/// How long a query of a batch-capable carrier waits for company (`CMP_BATCH_LINGER_MS`).
pub const BATCH_LINGER: std::time::Duration = std::time::Duration::from_millis(10);

/// 2026-04-02 10:00 in Shanghai: the seed's "today".
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 2, 2, 0, 0)
        .single()
        .expect("valid time")
}

pub struct World {
    pub env: TestEnv,
    pub stores: Stores,
    pub sim: SimHandle,
    pub clock: ManualClock,
    pub keys: Keys,
    pub pool: Pool,
    pub queue: PollingQueueManager,
    pub semaphore: ConcurrencySemaphore,
    pub cache: CardCache,
    pub protect: ProtectKeys,
    pub counters: TaskCounters,
    pub configs: PollingConfigManager,
    pub deps: HandlerDeps,
    pub registry: Registry,
}

/// A card to insert: the seed's defaults are a real-named, online, standalone normal card.
#[derive(Debug, Clone)]
pub struct CardSpec {
    pub id: i64,
    pub real: RealNameStatus,
    pub net: NetworkStatus,
    pub reason: Option<StopReason>,
    pub device: Option<DeviceId>,
    /// What the carrier reports as this month's total.
    pub month_total_mb: Decimal,
}

impl CardSpec {
    pub fn new(id: i64) -> Self {
        Self {
            id,
            real: RealNameStatus::Verified,
            net: NetworkStatus::Online,
            reason: None,
            device: None,
            month_total_mb: Decimal::ZERO,
        }
    }

    pub fn stopped(mut self, reason: StopReason) -> Self {
        self.net = NetworkStatus::Stopped;
        self.reason = Some(reason);
        self
    }

    pub fn not_real_named(mut self) -> Self {
        self.real = RealNameStatus::NotVerified;
        self
    }

    pub fn on(mut self, device: DeviceId) -> Self {
        self.device = Some(device);
        self
    }
}

pub fn iccid(id: i64) -> String {
    format!("898600000000{id:08}")
}

/// A client with a short timeout and short back-offs, so failure tests stay fast.
fn gateway(sim: &SimHandle) -> HttpGateway {
    let config = GatewayConfig {
        timeout: std::time::Duration::from_millis(1000),
        retry: RetryPolicy {
            base_delay: std::time::Duration::from_millis(10),
            max_delay: std::time::Duration::from_millis(40),
            ..RetryPolicy::default()
        },
        ..GatewayConfig::new(sim.url())
    };
    HttpGateway::new(config, None).expect("gateway client builds")
}

/// The sim's default account for `protocol`, as a carrier configuration of carrier 1 (the
/// carrier of every card of the world) at the sim's root of that protocol.
pub fn account_of(sim: &SimHandle, protocol: CarrierProtocol) -> CarrierAccount {
    let mut credentials = Credentials::new();
    for (k, v) in gateway_sim::SimAccount::default_for(protocol).credentials {
        credentials = credentials.with(k, v);
    }
    let now = Utc::now();
    CarrierAccount {
        carrier_id: CarrierId(1),
        name: format!("carrier on {protocol}"),
        protocol,
        base_url: sim.url_of(protocol),
        credentials,
        limits: CarrierLimits {
            rate_limit_per_sec: 0,
            max_concurrent: 0,
            timeout_ms: 1000,
            ..protocol.default_limits()
        },
        enabled: true,
        created_at: now,
        updated_at: now,
    }
}

impl World {
    pub async fn new() -> World {
        Self::build(|sim, _| Arc::new(gateway(sim))).await
    }

    /// A world whose cards (carrier 1) are served through the [`CarrierRouter`] by the adapter
    /// of `protocol`, configured with `account` (the sim's default account unless changed), with
    /// batched dispatch on (a protocol with batch calls answers concurrent polls together).
    pub async fn for_carrier(
        protocol: CarrierProtocol,
        change: impl FnOnce(&mut CarrierAccount),
    ) -> (World, Arc<CarrierRouter>) {
        let mut slot = None;
        let w = Self::build(|sim, clock| {
            let mut account = account_of(sim, protocol);
            if protocol == CarrierProtocol::OneLink {
                // OneLink's batch queries are assumed calls (`docs/carriers/onelink.md`): off
                // by default at both ends. These tests are of batched dispatch: turned on.
                account.limits.assumed_calls = domain::AssumedCalls::all();
                sim.state().set_account(
                    protocol,
                    gateway_sim::SimAccountPatch {
                        assumed_calls: Some(true),
                        ..Default::default()
                    },
                );
            }
            change(&mut account);
            let mut ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, clock);
            ctx.retry = RetryPolicy {
                base_delay: std::time::Duration::from_millis(10),
                max_delay: std::time::Duration::from_millis(40),
                ..RetryPolicy::default()
            };
            let router = Arc::new(CarrierRouter::new(Arc::new(gateway(sim)), ctx));
            let refused = router.apply(vec![account]);
            assert!(
                refused.is_empty() || protocol == CarrierProtocol::CmpJson,
                "adapter builds: {refused:?}"
            );
            slot = Some(router.clone());
            // As a worker node wires it: concurrent polls' queries go in batch calls.
            Arc::new(gateway::BatchingGateway::new(router, BATCH_LINGER))
        })
        .await;
        (w, slot.expect("router built"))
    }

    async fn build(
        gateway_of: impl FnOnce(&SimHandle, Arc<dyn domain::Clock>) -> Arc<dyn gateway::CarrierGateway>,
    ) -> World {
        let env = TestEnv::new().await.expect("test env");
        let stores = Stores::new(env.db.conn.clone());
        let clock = ManualClock::new(t0());
        let sim = SimServer::start(SimOptions {
            clock: Arc::new(clock.clone()),
            ..SimOptions::default()
        })
        .await
        .expect("sim starts");
        let keys = Keys::new(env.redis.prefix.clone());
        let pool = env.redis.pool_of(8).await.expect("redis pool");
        let arc_clock: Arc<dyn domain::Clock> = Arc::new(clock.clone());
        let queue = PollingQueueManager::new(
            pool.clone(),
            keys.clone(),
            QueueSettings::default(),
            arc_clock.clone(),
        );
        let semaphore = ConcurrencySemaphore::new(
            pool.clone(),
            keys.clone(),
            SemaphoreSettings::uniform(100, std::time::Duration::from_secs(300)),
            arc_clock.clone(),
        );
        let cache = CardCache::new(pool.clone(), keys.clone());
        let protect = ProtectKeys::new(pool.clone(), keys.clone());
        let counters = TaskCounters::new(pool.clone(), keys.clone(), arc_clock.clone());
        let configs = PollingConfigManager::new(stores.configs.clone(), pool.clone(), keys.clone());
        stores
            .configs
            .insert(&config_input())
            .await
            .expect("config inserts");
        configs.refresh().await.expect("configs load");
        let gw: Arc<dyn gateway::CarrierGateway> = gateway_of(&sim, arc_clock.clone());
        let lifecycle = lifecycle::PollingLifecycleService::new(
            stores.cards.clone(),
            stores.devices.clone(),
            queue.clone(),
            configs.clone(),
            arc_clock.clone(),
        );
        let stop_resume = StopResumeService::new(
            stores.cards.clone(),
            stores.packages.clone(),
            gw.clone(),
            protect.clone(),
            CardLock::new(pool.clone(), keys.clone()),
            arc_clock.clone(),
            StopResumeSettings::default(),
        )
        .with_lifecycle(lifecycle.clone());
        let deps = HandlerDeps {
            cards: stores.cards.clone(),
            devices: stores.devices.clone(),
            packages: stores.packages.clone(),
            gateway: gw,
            stop_resume,
            configs: configs.clone(),
            queue: queue.clone(),
            semaphore: semaphore.clone(),
            cache: cache.clone(),
            protect: protect.clone(),
            counters: counters.clone(),
            lifecycle,
            clock: arc_clock,
            settings: HandlerSettings {
                retry_interval: std::time::Duration::from_secs(RETRY_SECS as u64),
                ..HandlerSettings::default()
            },
        };
        let registry = build_registry(&deps);
        World {
            env,
            stores,
            sim,
            clock,
            keys,
            pool,
            queue,
            semaphore,
            cache,
            protect,
            counters,
            configs,
            deps,
            registry,
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        domain::Clock::now(&self.clock)
    }

    /// The queue score of `now + secs`.
    pub fn at(&self, secs: i64) -> f64 {
        to_score(self.now() + Duration::seconds(secs))
    }

    /// Runs the registered handler of `task` on the card, as the scheduler does.
    pub async fn handle(&self, task: TaskType, card: CardId) -> Outcome {
        let handler = self.registry.get(task).expect("handler registered").clone();
        handler.handle(card).await
    }

    /// Inserts the card with its explicit id, registers it with the sim and queues it (due now)
    /// in every task type, as the lifecycle would.
    pub async fn card(&self, spec: CardSpec) -> CardId {
        let sql = "INSERT INTO tb_iot_card (id, iccid, carrier_id, card_category, status, \
                   real_name_status, network_status, stop_reason, device_id) \
                   VALUES ($1, $2, 1, 'normal', 1, $3, $4, $5, $6)";
        let values: Vec<Value> = vec![
            spec.id.into(),
            iccid(spec.id).into(),
            i16::from(spec.real).into(),
            i16::from(spec.net).into(),
            StopReason::to_column(spec.reason).into(),
            spec.device.map(|d| d.get()).into(),
        ];
        self.exec(sql, values).await;
        let sim_card = SimCardSpec {
            real_name_status: spec.real,
            network_status: spec.net,
            month_total_mb: spec.month_total_mb,
            ..SimCardSpec::new(iccid(spec.id))
        };
        self.sim
            .state()
            .upsert_cards(vec![sim_card])
            .expect("sim card");
        let id = CardId(spec.id);
        for task in TaskType::ALL {
            self.queue
                .requeue(id, task, self.now())
                .await
                .expect("queued");
        }
        id
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

    /// A package bought for `owner`: active from a day ago for 30 days unless changed.
    pub fn package(
        &self,
        owner: PackageOwner,
        limit: Option<Megabytes>,
        used: Megabytes,
    ) -> NewPackageUsage {
        let bought = self.now() - Duration::days(1);
        NewPackageUsage::active(
            owner,
            limit,
            Decimal::ONE,
            used,
            bought,
            bought + Duration::days(31),
        )
    }

    pub async fn add_package(&self, p: NewPackageUsage) -> PackageUsage {
        self.stores
            .packages
            .create_usage(&p)
            .await
            .expect("package inserts")
    }

    pub async fn packages_of(&self, owner: PackageOwner) -> Vec<PackageUsage> {
        self.stores
            .packages
            .usages_of(owner)
            .await
            .expect("packages read")
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

    /// The picks of the decisive lane of `task`, earliest first: each card with its time.
    pub async fn decisive_picks(&self, task: TaskType) -> Vec<(CardId, f64)> {
        self.queue
            .decisive_picks(task, 100)
            .await
            .expect("lane reads")
    }

    pub async fn score(&self, card: CardId, task: TaskType) -> Option<f64> {
        self.queue.score_of(card, task).await.expect("score reads")
    }

    /// `(stop_calls, start_calls)` the sim saw for the card.
    pub fn calls(&self, card: CardId) -> (u32, u32) {
        let v = self.sim.state().card(&iccid(card.get())).expect("sim card");
        (v.stop_calls, v.start_calls)
    }

    pub fn set_carrier_packages(&self, card: CardId, packages: Vec<CarrierPackage>) {
        let patch = gateway_sim::SimCardPatch {
            packages: Some(packages),
            ..Default::default()
        };
        self.sim
            .state()
            .patch_card(&iccid(card.get()), patch)
            .expect("patch")
            .expect("sim card");
    }

    pub async fn exec(&self, sql: &str, values: Vec<Value>) -> u64 {
        let stmt = Statement::from_sql_and_values(DbBackend::Postgres, sql, values);
        self.env
            .db
            .conn
            .execute_raw(stmt)
            .await
            .expect("sql runs")
            .rows_affected()
    }

    pub async fn query(&self, sql: &str, values: Vec<Value>) -> Vec<sea_orm::QueryResult> {
        let stmt = Statement::from_sql_and_values(DbBackend::Postgres, sql, values);
        self.env
            .db
            .conn
            .query_all_raw(stmt)
            .await
            .expect("sql runs")
    }
}

/// Every task type scheduled, no condition: every card matches.
pub fn config_input() -> PollingConfigInput {
    PollingConfigInput {
        name: "all cards".into(),
        priority: 10,
        enabled: true,
        card_condition: None,
        card_category: None,
        carrier_id: None,
        intervals: Intervals {
            realname_interval_secs: Some(REALNAME_SECS as u32),
            carddata_interval_secs: Some(CARDDATA_SECS as u32),
            package_interval_secs: Some(PACKAGE_SECS as u32),
            protect_interval_secs: Some(PROTECT_SECS as u32),
        },
    }
}

/// Asserts a queue score within a second of `expected` (scores are fractional seconds).
pub fn assert_score(got: Option<f64>, expected: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("{what}: card not queued"));
    assert!(
        (got - expected).abs() < 1.0,
        "{what}: score {got}, expected about {expected}"
    );
}

/// For `tracing_test::logs_assert`: some captured line holds every one of `parts` (a message
/// and the structured fields attached to it, e.g. `card_id=100`).
pub fn line_with<'a>(parts: &'a [&'a str]) -> impl Fn(&[&str]) -> Result<(), String> + 'a {
    move |lines: &[&str]| {
        if lines.iter().any(|l| parts.iter().all(|p| l.contains(p))) {
            Ok(())
        } else {
            Err(format!("no log line with all of {parts:?}"))
        }
    }
}
