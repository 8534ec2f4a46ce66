use super::wire::{month_bounds, network_of, parse_time, signed_amount};
use super::*;
use crate::carriers::build_adapter;
use chrono::{NaiveDate, Utc};
use domain::{CarrierLimits, CarrierProtocol, Credentials, SystemClock};
use gateway_sim::{SimAccount, SimCardSpec, SimOptions, SimServer};
use rust_decimal::Decimal;

fn account(url: String) -> CarrierAccount {
    let creds = SimAccount::default_for(CarrierProtocol::OneNce)
        .credentials
        .into_iter()
        .fold(Credentials::new(), |c, (k, v)| c.with(k, v));
    CarrierAccount {
        carrier_id: CarrierId(7),
        name: "1nce".into(),
        protocol: CarrierProtocol::OneNce,
        base_url: url,
        credentials: creds,
        limits: CarrierLimits {
            timeout_ms: 2_000,
            ..CarrierProtocol::OneNce.default_limits()
        },
        enabled: true,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

#[test]
fn tables_and_values() {
    assert_eq!(network_of("Enabled"), Some(NetworkStatus::Online));
    assert_eq!(network_of("Disabled"), Some(NetworkStatus::Stopped));
    assert_eq!(network_of("Suspended"), None);
    assert_eq!(
        signed_amount(&serde_json::json!(-12.5)),
        Some(Decimal::new(-125, 1))
    );
    assert_eq!(signed_amount(&serde_json::json!("1e3")), None);
    assert!(parse_time("2029-01-01T00:00:00.000Z").is_some());
    assert!(parse_time("2018-03-09T07:59:09.000+0000").is_some());
    assert!(parse_time("2029-01-01 00:00:00").is_some());
    assert!(parse_time("soon").is_none());
    let feb = NaiveDate::from_ymd_opt(2028, 2, 1).unwrap_or_default();
    assert_eq!(
        month_bounds(feb).1,
        NaiveDate::from_ymd_opt(2028, 2, 29).unwrap_or_default()
    );
}

/// SIM Management, "Get All SIMs": pages of up to 100 with the totals in the headers.
#[tokio::test]
async fn sim_management_get_all_sims_pages_of_100_with_totals() {
    let sim = SimServer::start(SimOptions::default()).await.unwrap();
    let cards: Vec<SimCardSpec> = (0..150)
        .map(|i| SimCardSpec::new(format!("898822806660{i:07}")))
        .collect();
    sim.state().upsert_cards(cards).unwrap();
    sim.state()
        .patch_card(
            "8988228066600000149",
            gateway_sim::SimCardPatch {
                network_status: Some(NetworkStatus::Stopped),
                ..Default::default()
            },
        )
        .unwrap();
    let ctx = AdapterContext::new(chrono_tz::Asia::Shanghai, Arc::new(SystemClock));
    let acc = account(sim.url_of(CarrierProtocol::OneNce));
    // The concrete type, for its own method (build_adapter answers the trait object).
    let adapter = OneNce::new(&acc, &ctx).unwrap();
    assert!(build_adapter(&acc, &ctx).is_ok());

    let first = adapter.sims_page(1).await.unwrap();
    assert_eq!(first.sims.len(), 100);
    assert_eq!(
        (first.page, first.total_count, first.total_pages),
        (1, Some(150), Some(2))
    );
    assert_eq!(first.sims[0].0, "8988228066600000000");
    assert_eq!(first.sims[0].1, Ok(NetworkStatus::Online));

    let second = adapter.sims_page(2).await.unwrap();
    assert_eq!(second.sims.len(), 50);
    assert_eq!(second.page, 2);
    assert_eq!(
        second.sims.last(),
        Some(&("8988228066600000149".to_owned(), Ok(NetworkStatus::Stopped)))
    );
    assert!(adapter.sims_page(3).await.unwrap().sims.is_empty());
}
