//! CardInitializer on real PostgreSQL and Redis: a mixed fleet of 250,000 cards, repair, a run
//! killed after its first page, progress, the shard-count guard and the lease.

mod common;

use anyhow::Context as _;
use common::*;
use domain::store::{CardStore, StoreResult};
use domain::{
    CardCategory, CardCondition, CardFilter, CardId, CardMatchFields, CarrierId, DeviceId,
    Intervals, NetworkStatus, NewCard, NewDevice, PollingConfigInput, RealNameStatus, TaskType,
};
use fred::prelude::*;
use lifecycle::{CardInitializer, InitMode, InitSettings, InitStatus, LifecycleError, first_score};
use polling_queue::SingletonLease;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

type Queues = BTreeMap<(u32, TaskType), BTreeMap<i64, f64>>;

/// What the queues must hold after a run, computed independently of the initializer.
struct Expected {
    /// (shard, task) -> card id -> interval seconds
    entries: BTreeMap<(u32, TaskType), BTreeMap<i64, u64>>,
    eligible: u64,
    unmatched: u64,
    per_shard: Vec<u64>,
}

/// A fleet with a mix of flags, devices, carriers, categories and states, and four configs
/// (one disabled). Returns what the queues must hold.
async fn mixed_fleet(w: &World, cards: u64) -> anyhow::Result<Expected> {
    let all = intervals(600, 300, 3600, Some(60));
    let industry = Intervals {
        carddata_interval_secs: Some(1800),
        package_interval_secs: Some(7200),
        ..Intervals::default()
    };
    let stopped = Intervals {
        realname_interval_secs: Some(120),
        ..Intervals::default()
    };
    let configs = [
        PollingConfigInput {
            enabled: false,
            ..config("disabled catch-all", 0, all)
        },
        PollingConfigInput {
            carrier_id: Some(CarrierId(1)),
            ..config("carrier 1", 1, all)
        },
        PollingConfigInput {
            card_category: Some(CardCategory::Industry),
            ..config("industry", 2, industry)
        },
        PollingConfigInput {
            card_condition: Some(CardCondition::Stopped),
            ..config("stopped", 3, stopped)
        },
    ];
    for c in configs {
        w.add_config(c).await?;
    }
    let device_rows: Vec<NewDevice> = (0..1000)
        .map(|n| NewDevice {
            device_no: format!("dev-{n}"),
            enable_polling: n % 10 != 0,
        })
        .collect();
    let devices = w.stores.devices.insert_bulk(&device_rows).await?;
    let device_on: BTreeMap<DeviceId, bool> = devices
        .iter()
        .zip(&device_rows)
        .map(|(id, d)| (*id, d.enable_polling))
        .collect();
    let fleet: Vec<NewCard> = (0..cards)
        .map(|n| NewCard {
            carrier_id: CarrierId((n % 5) as i64),
            card_category: if n % 7 == 0 {
                CardCategory::Industry
            } else {
                CardCategory::Normal
            },
            real_name_status: if n % 2 == 0 {
                RealNameStatus::Verified
            } else {
                RealNameStatus::NotVerified
            },
            network_status: if n % 4 == 0 {
                NetworkStatus::Stopped
            } else {
                NetworkStatus::Online
            },
            enable_polling: n % 17 != 0,
            device_id: if n % 3 == 0 {
                None
            } else {
                Some(devices[(n % 1000) as usize])
            },
            ..new_card(n, 0)
        })
        .collect();
    let mut ids = Vec::with_capacity(fleet.len());
    for chunk in fleet.chunks(50_000) {
        ids.extend(w.stores.cards.insert_bulk(chunk).await?);
    }
    let ordered = domain::matching_order(w.stores.configs.list_all().await?);
    let mut exp = Expected {
        entries: BTreeMap::new(),
        eligible: 0,
        unmatched: 0,
        per_shard: vec![0; SHARDS as usize],
    };
    for (id, c) in ids.iter().zip(&fleet) {
        if !c.enable_polling || c.device_id.is_some_and(|d| !device_on[&d]) {
            continue;
        }
        exp.eligible += 1;
        let fields = CardMatchFields {
            id: *id,
            carrier_id: c.carrier_id,
            card_category: c.card_category,
            real_name_status: c.real_name_status,
            network_status: c.network_status,
        };
        let Some(cfg) = domain::first_match(&ordered, &fields) else {
            exp.unmatched += 1;
            continue;
        };
        let shard = id.shard(SHARDS);
        exp.per_shard[shard as usize] += 1;
        for (t, d) in cfg.spec.intervals.scheduled() {
            exp.entries
                .entry((shard, t))
                .or_default()
                .insert(id.get(), d.as_secs());
        }
    }
    Ok(exp)
}

fn settings() -> InitSettings {
    InitSettings {
        shard_count: SHARDS,
        lease_ttl: Duration::from_secs(10),
        ..InitSettings::default()
    }
}

fn initializer(w: &World, cards: Arc<dyn CardStore>, s: InitSettings) -> CardInitializer {
    CardInitializer::new(
        cards,
        w.configs.clone(),
        w.pool.clone(),
        w.keys.clone(),
        Arc::new(w.clock.clone()),
        s,
    )
}

/// Every eligible, matched card in each scheduled queue of its shard exactly once (a zset
/// cannot hold a member twice; `all_queues` also checks no other shard has it), nothing else,
/// each first score `now + hash(id) % interval`.
fn assert_queues(q: &Queues, exp: &Expected, now: i64) {
    let got: BTreeSet<_> = q.keys().collect();
    let want: BTreeSet<_> = exp.entries.keys().collect();
    assert_eq!(got, want, "queue keys");
    for (key, members) in &exp.entries {
        let queued = &q[key];
        assert_eq!(queued.len(), members.len(), "{key:?}");
        for (id, interval) in members {
            let score = queued.get(id).copied();
            assert_eq!(
                score,
                Some(first_score(*id, key.1, *interval, now) as f64),
                "card {id} in {key:?}"
            );
        }
    }
}

async fn assert_progress(init: &CardInitializer, exp: &Expected) -> anyhow::Result<()> {
    let p = init.progress().await?.context("progress hash")?;
    assert_eq!(p.status, Some(InitStatus::Completed));
    assert_eq!(p.shard_count, Some(SHARDS));
    assert_eq!(
        (p.total, p.processed, p.unmatched),
        (exp.eligible, exp.eligible, exp.unmatched)
    );
    assert_eq!(p.shards, exp.per_shard);
    assert_eq!(p.shards.iter().sum::<u64>() + p.unmatched, p.processed);
    let (started, finished) = (
        p.started_at.context("started_at")?,
        p.finished_at.context("finished_at")?,
    );
    assert!(started <= finished);
    assert_eq!(p.error, None);
    Ok(())
}

#[tokio::test]
async fn fleet_of_250_000_repair_and_shard_count_guard() -> anyhow::Result<()> {
    let w = World::new().await?;
    let exp = mixed_fleet(&w, 250_000).await?;
    let init = initializer(&w, w.cards(), settings());
    assert!(init.needs_run().await?);

    let report = init.run(InitMode::Initial).await?;
    println!("250,000 cards: {report:?}");
    assert_eq!(report.processed, exp.eligible);
    assert_eq!(report.unmatched, exp.unmatched);
    let queued: u64 = exp.entries.values().map(|m| m.len() as u64).sum();
    assert_eq!(report.added, queued);
    let before = w.all_queues().await?;
    assert_queues(&before, &exp, t0().timestamp());
    assert_progress(&init, &exp).await?;
    assert!(!init.needs_run().await?);
    assert!(matches!(
        init.run(InitMode::Initial).await,
        Err(LifecycleError::AlreadyCompleted)
    ));

    // Repair an hour later over the live queues: nothing moves.
    w.clock.advance(chrono::Duration::hours(1));
    let repair = init.run(InitMode::Repair).await?;
    assert_eq!(repair.added, 0);
    assert_eq!(w.all_queues().await?, before, "repair changed no score");
    assert_progress(&init, &exp).await?;

    // Entries lost meanwhile come back; every other score stays.
    let key = w.keys.shard_queue(3, TaskType::Carddata);
    let lost: Vec<String> = before[&(3, TaskType::Carddata)]
        .keys()
        .take(100)
        .map(i64::to_string)
        .collect();
    let _: i64 = w.pool.zrem(&key, lost.clone()).await?;
    assert_eq!(init.run(InitMode::Repair).await?.added, 100);
    let after = w.all_queues().await?;
    for (k, members) in &before {
        for (id, score) in members {
            if k == &(3, TaskType::Carddata) && lost.contains(&id.to_string()) {
                assert!(after[k][id] >= (t0() + chrono::Duration::hours(1)).timestamp() as f64);
            } else {
                assert_eq!(after[k][id], *score);
            }
        }
    }

    // Another shard count is refused, naming both counts; nothing is written.
    let eight = initializer(
        &w,
        w.cards(),
        InitSettings {
            shard_count: 8,
            ..settings()
        },
    );
    let err = eight
        .run(InitMode::Repair)
        .await
        .err()
        .context("must refuse")?;
    assert!(
        matches!(
            err,
            LifecycleError::ShardCountMismatch {
                recorded: 16,
                configured: 8
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("16") && err.to_string().contains('8'));
    assert_progress(&init, &exp).await?;
    Ok(())
}

#[tokio::test]
async fn killed_after_the_first_page_then_rerun_completes() -> anyhow::Result<()> {
    let w = World::new().await?;
    let exp = mixed_fleet(&w, 30_000).await?;
    let gate = Arc::new(Semaphore::new(1));
    let gated: Arc<dyn CardStore> = Arc::new(Gated {
        inner: w.cards(),
        gate: gate.clone(),
    });
    // A short lease, so that the dead run's lease ends soon.
    let s = InitSettings {
        page_size: 5_000,
        lease_ttl: Duration::from_secs(2),
        ..settings()
    };
    let init = initializer(&w, gated, s);

    let run = tokio::spawn({
        let init = init.clone();
        async move { init.run(InitMode::Initial).await }
    });
    // The first page is written and recorded; the second read waits at the gate.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let p = init.progress().await?;
        if p.as_ref().is_some_and(|p| p.processed >= 5_000) {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "first page never recorded: {p:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    run.abort();
    assert!(run.await.is_err_and(|e| e.is_cancelled()));
    let p = init.progress().await?.context("progress")?;
    assert_eq!((p.status, p.processed), (Some(InitStatus::Running), 5_000));
    assert!(init.needs_run().await?);
    // The dead run's lease is still held until its TTL ends.
    assert!(matches!(
        init.run(InitMode::Initial).await,
        Err(LifecycleError::LeaseHeld { .. })
    ));

    gate.add_permits(1_000);
    // Wait for the dead run's lease to end with its TTL.
    let lease = w.keys.render(&polling_queue::RedisKey::Lease {
        job: "initializer".into(),
    });
    let deadline = tokio::time::Instant::now() + s.lease_ttl + Duration::from_secs(5);
    loop {
        let held: i64 = w.pool.exists(lease.as_str()).await?;
        if held == 0 {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the dead run's lease never ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report = init.run(InitMode::Initial).await?;
    assert_eq!(report.processed, exp.eligible);
    assert_queues(&w.all_queues().await?, &exp, t0().timestamp());
    assert_progress(&init, &exp).await?;
    Ok(())
}

#[tokio::test]
async fn refuses_while_another_node_holds_the_lease() -> anyhow::Result<()> {
    let w = World::new().await?;
    let held = SingletonLease::new(w.pool.clone(), w.keys.clone());
    let _token = held
        .try_acquire("initializer", Duration::from_secs(30))
        .await?
        .context("lease")?;
    let init = initializer(&w, w.cards(), settings());
    let err = init
        .run(InitMode::Initial)
        .await
        .err()
        .context("must refuse")?;
    assert!(matches!(err, LifecycleError::LeaseHeld { .. }), "{err}");
    assert_eq!(init.progress().await?, None);
    Ok(())
}

/// A card store whose keyset reads pass one gate permit each; everything else is unused here.
struct Gated {
    inner: Arc<dyn CardStore>,
    gate: Arc<Semaphore>,
}

#[async_trait::async_trait]
impl CardStore for Gated {
    async fn page_polling_enabled(
        &self,
        after: Option<CardId>,
        limit: u32,
    ) -> StoreResult<Vec<CardMatchFields>> {
        if let Ok(permit) = self.gate.acquire().await {
            permit.forget();
        }
        self.inner.page_polling_enabled(after, limit).await
    }
    async fn count_polling_enabled(&self) -> StoreResult<u64> {
        self.inner.count_polling_enabled().await
    }
    async fn polling_enabled_among(&self, ids: &[CardId]) -> StoreResult<Vec<CardId>> {
        self.inner.polling_enabled_among(ids).await
    }
    async fn get(&self, id: CardId) -> StoreResult<Option<domain::Card>> {
        self.inner.get(id).await
    }
    async fn get_many(&self, ids: &[CardId]) -> StoreResult<Vec<domain::Card>> {
        self.inner.get_many(ids).await
    }
    async fn facts_of(
        &self,
        ids: &[CardId],
        packages: bool,
    ) -> StoreResult<Vec<domain::store::CardFacts>> {
        self.inner.facts_of(ids, packages).await
    }
    async fn insert(&self, _: &NewCard) -> StoreResult<domain::Card> {
        unimplemented!()
    }
    async fn insert_bulk(&self, _: &[NewCard]) -> StoreResult<Vec<CardId>> {
        unimplemented!()
    }
    async fn list(
        &self,
        _: &CardFilter,
        _: domain::store::Page,
    ) -> StoreResult<domain::store::Paged<domain::Card>> {
        unimplemented!()
    }
    async fn list_ids(
        &self,
        _: &CardFilter,
        _: Option<CardId>,
        _: u32,
    ) -> StoreResult<Vec<CardId>> {
        unimplemented!()
    }
    async fn ids_of_devices(&self, _: &[DeviceId]) -> StoreResult<Vec<CardId>> {
        unimplemented!()
    }
    async fn count(&self) -> StoreResult<u64> {
        unimplemented!()
    }
    async fn set_real_name(
        &self,
        id: CardId,
        status: RealNameStatus,
    ) -> StoreResult<Option<domain::store::RealNameWrite>> {
        self.inner.set_real_name(id, status).await
    }
    async fn set_enable_polling(&self, _: CardId, _: bool) -> StoreResult<domain::Card> {
        unimplemented!()
    }
    async fn set_status(&self, _: CardId, _: i16) -> StoreResult<domain::Card> {
        unimplemented!()
    }
    async fn set_device(&self, _: CardId, _: Option<DeviceId>) -> StoreResult<domain::Card> {
        unimplemented!()
    }
    async fn soft_delete(&self, _: CardId) -> StoreResult<bool> {
        unimplemented!()
    }
    async fn record_state_change(&self, _: &domain::NewCardStateLog) -> StoreResult<()> {
        unimplemented!()
    }
    async fn append_state_if(
        &self,
        _: &domain::NewCardStateLog,
        _: Option<domain::StopReason>,
    ) -> StoreResult<domain::store::StateWrite> {
        unimplemented!()
    }
    async fn close_intent(
        &self,
        _: i64,
        _: domain::GatewayOutcome,
    ) -> StoreResult<domain::store::IntentClose> {
        unimplemented!()
    }
    async fn interrupt_stale_intents(&self, _: CardId, _: std::time::Duration) -> StoreResult<u64> {
        unimplemented!()
    }
    async fn state_log(
        &self,
        _: CardId,
        _: domain::store::Page,
    ) -> StoreResult<domain::store::Paged<domain::CardStateLog>> {
        unimplemented!()
    }
    async fn record_usage(
        &self,
        id: CardId,
        reported: &domain::MonthUsage,
        asked_at: chrono::DateTime<chrono::Utc>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Option<domain::store::UsageRecorded>> {
        self.inner.record_usage(id, reported, asked_at, now).await
    }
}
