#![allow(dead_code, unreachable_pub)]

pub mod carriers;

use gateway::{GatewayConfig, HttpGateway, RetryPolicy};
use gateway_sim::{SimCardSpec, SimHandle, SimOptions, SimServer};
use std::time::Duration;

pub async fn sim() -> SimHandle {
    sim_with(SimOptions::default()).await
}

pub async fn sim_with(opts: SimOptions) -> SimHandle {
    SimServer::start(opts).await.expect("sim starts")
}

/// A client with short back-offs so that retry tests stay fast.
pub fn config(sim: &SimHandle) -> GatewayConfig {
    GatewayConfig {
        timeout: Duration::from_secs(2),
        retry: RetryPolicy {
            base_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(100),
            ..RetryPolicy::default()
        },
        ..GatewayConfig::new(sim.url())
    }
}

pub fn client(sim: &SimHandle) -> HttpGateway {
    HttpGateway::new(config(sim), None).expect("client builds")
}

pub fn register(sim: &SimHandle, iccids: &[&str]) {
    let specs = iccids.iter().map(|i| SimCardSpec::new(*i)).collect();
    sim.state().upsert_cards(specs).expect("cards register");
}
