//! The carriers' budget figures on a seeded fleet (two carriers of different limits and batch
//! sizes, three configs, cards of a carrier without a row and cards not polled), to the exact
//! arithmetic; the calls a worker reports; and a `carrier_round_ratio` rule firing and clearing
//! as a carrier's budget changes.

mod common;

use admin::alerts::AlertService;
use admin::budget::{BudgetService, BudgetStores, CallReporter, USED_WINDOW_MINUTES};
use admin::webhook::WebhookSettings;
use common::World;
use domain::{
    AlertMetric, AlertOperator, AlertRuleInput, AssumedCalls, BudgetReport, CardCondition,
    CarrierAccountInput, CarrierBudget, CarrierHealth, CarrierHealthState, CarrierId,
    CarrierLimits, CarrierProtocol, Clock as _, Credentials, Intervals, PollingConfigInput,
    TaskType,
};
use rust_decimal_macros::dec;

fn account(id: i64, protocol: CarrierProtocol, rate: u32, batch: u32) -> CarrierAccountInput {
    let credentials = protocol
        .credential_fields()
        .iter()
        .fold(Credentials::new(), |c, f| c.with(*f, "x"));
    CarrierAccountInput {
        carrier_id: CarrierId(id),
        name: format!("carrier {id}"),
        protocol,
        base_url: "http://127.0.0.1:9".into(),
        credentials: Some(credentials),
        limits: CarrierLimits {
            rate_limit_per_sec: rate,
            max_concurrent: 5,
            batch_size: batch,
            timeout_ms: 2_000,
            // OneLink's batch queries are assumed calls: turned on, so it batches 50 a call.
            assumed_calls: if protocol == CarrierProtocol::OneLink {
                AssumedCalls::all()
            } else {
                AssumedCalls::NONE
            },
        },
        enabled: true,
    }
}

fn config(
    name: &str,
    priority: i32,
    carrier: Option<i64>,
    condition: Option<CardCondition>,
    [realname, carddata, package, protect]: [Option<u32>; 4],
) -> PollingConfigInput {
    PollingConfigInput {
        name: name.into(),
        priority,
        enabled: true,
        card_condition: condition,
        card_category: None,
        carrier_id: carrier.map(CarrierId),
        intervals: Intervals {
            realname_interval_secs: realname,
            carddata_interval_secs: carddata,
            package_interval_secs: package,
            protect_interval_secs: protect,
        },
    }
}

fn service(w: &World) -> BudgetService {
    BudgetService::new(
        BudgetStores {
            carriers: w.stores.carriers.clone(),
            cards: w.stores.card_admin.clone(),
            configs: w.stores.configs.clone(),
        },
        w.recent.carrier_calls(),
        w.recent.budget_board(),
        w.clock(),
    )
}

/// Carrier 1: OneLink, 10 calls/s, 50 cards a batch query; 30,000 real-named cards matching
/// its own config (real-name and packages hourly, usage every 5 min, protect every 10 min).
/// Carrier 2: Control Center, 2 calls/s, `batch_size` 100 configured but no batch call (the
/// adapter's 1); 600 cards not real-named (real-name and usage every 10 min) and 1,200
/// real-named (usage every 5 min, packages every 30 min). Carrier 3 has no row; 10 cards of
/// carrier 1 are not polled.
async fn seed(w: &World) -> anyhow::Result<()> {
    w.stores
        .carriers
        .insert(&account(1, CarrierProtocol::OneLink, 10, 50))
        .await?;
    w.stores
        .carriers
        .insert(&account(2, CarrierProtocol::ControlCenter, 2, 100))
        .await?;
    for c in [
        config(
            "carrier 1",
            10,
            Some(1),
            None,
            [Some(3600), Some(300), Some(3600), Some(600)],
        ),
        config(
            "not real-named",
            20,
            None,
            Some(CardCondition::NotRealname),
            [Some(600), Some(600), None, None],
        ),
        config("rest", 30, None, None, [None, Some(300), Some(1800), None]),
    ] {
        w.stores.configs.insert(&c).await?;
    }
    w.sql(
        "INSERT INTO tb_iot_card (iccid, carrier_id, real_name_status, enable_polling) \
         SELECT 'a' || g, 1, 1, true FROM generate_series(1, 30000) g \
         UNION ALL SELECT 'b' || g, 2, 0, true FROM generate_series(1, 600) g \
         UNION ALL SELECT 'c' || g, 2, 1, true FROM generate_series(1, 1200) g \
         UNION ALL SELECT 'd' || g, 3, 1, true FROM generate_series(1, 100) g \
         UNION ALL SELECT 'e' || g, 1, 1, false FROM generate_series(1, 10) g",
    )
    .await?;
    Ok(())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn of(report: &BudgetReport, id: i64) -> &CarrierBudget {
    report
        .carriers
        .iter()
        .find(|c| c.carrier_id == CarrierId(id))
        .unwrap_or_else(|| panic!("carrier {id} in {report:?}"))
}

/// `(task, interval, cards, cards per call, round secs)` of every row.
fn rows(c: &CarrierBudget) -> Vec<(TaskType, u64, u64, u32, f64)> {
    c.tasks
        .iter()
        .map(|t| {
            (
                t.task_type,
                t.interval_secs,
                t.cards,
                t.cards_per_call,
                t.round_secs,
            )
        })
        .collect()
}

#[tokio::test]
async fn the_figures_of_a_seeded_fleet_are_exact() -> anyhow::Result<()> {
    let w = World::new().await?;
    seed(&w).await?;
    // Carrier 1 made 600 calls two minutes ago and 300 a minute ago (900 over the 5-minute
    // window: 3 calls/s); the current minute's calls do not count yet.
    let calls = w.recent.carrier_calls();
    let now = w.clock.now();
    calls
        .record(&[(CarrierId(1), 600)], now - chrono::Duration::minutes(2))
        .await?;
    calls
        .record(
            &[(CarrierId(1), 300), (CarrierId(2), 0)],
            now - chrono::Duration::minutes(1),
        )
        .await?;
    calls.record(&[(CarrierId(1), 5_000)], now).await?;

    let report = service(&w).compute().await?;
    assert_eq!(report.used_window_secs, USED_WINDOW_MINUTES * 60);
    assert_eq!(report.carriers.len(), 2, "carrier 3 has no row");

    // Carrier 1: 30,000/(3,600×50) + 30,000/(300×50) + 30,000/3,600 = 1/6 + 2 + 25/3 = 10.5
    // calls/s against 10: every round takes 1.05 intervals. Protect makes no query.
    let one = of(&report, 1);
    assert_eq!(one.allowed_calls_per_sec, Some(10.0));
    assert_eq!(one.batch_size, 50);
    assert!(
        close(one.used_calls_per_sec, 3.0),
        "{}",
        one.used_calls_per_sec
    );
    assert!(close(one.demand_calls_per_sec, 10.5), "{one:?}");
    assert!(close(one.round_ratio, 1.05), "{one:?}");
    let want = [
        (TaskType::Realname, 3600, 30_000, 50, 3780.0),
        (TaskType::Carddata, 300, 30_000, 50, 315.0),
        (TaskType::Package, 3600, 30_000, 1, 3780.0),
    ];
    let got = rows(one);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!((g.0, g.1, g.2, g.3), (w.0, w.1, w.2, w.3));
        assert!(close(g.4, w.4), "{g:?} against {w:?}");
    }
    assert!(one.tasks.iter().all(|t| t.over));
    assert!(close(one.tasks[1].demand_calls_per_sec, 2.0));

    // Carrier 2, one card a call: 600/600 + 600/600 + 1,200/300 + 1,200/1,800 = 20/3 calls/s
    // against 2: ratio 10/3.
    let two = of(&report, 2);
    assert_eq!(two.batch_size, 1, "Control Center has no batch call");
    assert_eq!(two.used_calls_per_sec, 0.0);
    assert!(close(two.demand_calls_per_sec, 20.0 / 3.0), "{two:?}");
    assert!(close(two.round_ratio, 10.0 / 3.0), "{two:?}");
    let want = [
        (TaskType::Realname, 600, 600, 1, 2000.0),
        (TaskType::Carddata, 300, 1_200, 1, 1000.0),
        (TaskType::Carddata, 600, 600, 1, 2000.0),
        (TaskType::Package, 1800, 1_200, 1, 6000.0),
    ];
    let got = rows(two);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!((g.0, g.1, g.2, g.3), (w.0, w.1, w.2, w.3));
        assert!(close(g.4, w.4), "{g:?} against {w:?}");
    }
    assert!(close(report.worst_round_ratio(), 10.0 / 3.0));

    // Nothing published before a refresh; the refresh publishes what it computed.
    let svc = service(&w);
    assert_eq!(svc.report().await?.computed_at, None);
    let published = svc.refresh().await?;
    assert_eq!(svc.report().await?, published);
    assert_eq!(published, report);
    Ok(())
}

fn health(id: i64, ok: u64, failed: u64) -> CarrierHealth {
    CarrierHealth {
        carrier_id: CarrierId(id),
        state: CarrierHealthState::Ok,
        last_ok_at: None,
        last_error_at: None,
        last_error_kind: None,
        last_error: None,
        calls_ok: ok,
        calls_failed: failed,
        updated_at: chrono::Utc::now(),
    }
}

#[tokio::test]
async fn a_worker_reports_the_calls_made_since_its_last_report() -> anyhow::Result<()> {
    let w = World::new().await?;
    let calls = w.recent.carrier_calls();
    let mut a = CallReporter::new(calls.clone());
    let mut b = CallReporter::new(calls.clone());
    let at = w.clock.now() - chrono::Duration::minutes(1);
    a.report(&[health(1, 100, 20), health(2, 7, 0)], at).await;
    a.report(&[health(1, 150, 20), health(2, 7, 0)], at).await;
    // A second node's router counts its own calls.
    b.report(&[health(1, 30, 0)], at).await;
    let got = calls
        .per_carrier(w.clock.now(), USED_WINDOW_MINUTES)
        .await?;
    assert_eq!(got.get(&CarrierId(1)), Some(&200), "120 + 50 + 30");
    assert_eq!(got.get(&CarrierId(2)), Some(&7));
    // Minutes out of the window do not count.
    let later = w.clock.now() + chrono::Duration::minutes(10);
    assert!(
        calls
            .per_carrier(later, USED_WINDOW_MINUTES)
            .await?
            .is_empty()
    );
    Ok(())
}

#[tokio::test]
async fn a_round_ratio_rule_fires_when_a_budget_falls_short_and_clears_when_it_suffices()
-> anyhow::Result<()> {
    let w = World::new().await?;
    seed(&w).await?;
    let rule = AlertService::new(w.stores.alerts.clone())
        .create(AlertRuleInput {
            name: "carrier rounds longer than the interval".into(),
            metric: AlertMetric::CarrierRoundRatio,
            task_type: None,
            stop_reason: None,
            operator: AlertOperator::Gt,
            threshold: dec!(1),
            window_secs: 60,
            enabled: true,
            webhook_url: None,
            cooldown_secs: 0,
            webhook_secret: None,
        })
        .await?;
    let id = rule.rule.id;
    let evaluator = w.evaluator(WebhookSettings::default())?;
    let svc = service(&w);

    // No figures yet (no worker ran the job): the rule is left as it is.
    let unknown = evaluator.evaluate().await?;
    assert_eq!((unknown.fired.len(), unknown.errors.len()), (0, 1));

    svc.refresh().await?;
    let fired = evaluator.evaluate().await?;
    assert_eq!(fired.fired, vec![id]);
    let history = w
        .stores
        .alerts
        .history(Some(id), Default::default())
        .await?;
    assert_eq!(history.items[0].value, dec!(3.333333), "carrier 2's 10/3");

    // Carrier 2 gets 7 calls/s (ratio 20/21 -> 1): carrier 1's 1.05 still holds the rule.
    let mut more = account(2, CarrierProtocol::ControlCenter, 7, 100);
    more.credentials = None;
    w.stores.carriers.update(&more).await?;
    svc.refresh().await?;
    let still = evaluator.evaluate().await?;
    assert!(still.resolved.is_empty() && still.fired.is_empty());

    // Carrier 1 at 11 calls/s: every carrier keeps its cards at their interval.
    let mut one = account(1, CarrierProtocol::OneLink, 11, 50);
    one.credentials = None;
    w.stores.carriers.update(&one).await?;
    let report = svc.refresh().await?;
    assert_eq!(report.worst_round_ratio(), 1.0);
    let resolved = evaluator.evaluate().await?;
    assert_eq!(resolved.resolved, vec![id]);
    assert_eq!(resolved.firing, 0);
    Ok(())
}
