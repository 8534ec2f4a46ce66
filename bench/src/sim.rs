//! The gateway-sim the end-to-end scenarios poll: in this process, answering after 1 ms.

use anyhow::Context;
use gateway_sim::{Faults, SimCardSpec, SimHandle, SimOptions, SimServer};

/// Every answer after 1 ms, no other fault.
pub(crate) fn options() -> SimOptions {
    SimOptions {
        faults: Faults {
            latency_ms: 1,
            ..Faults::default()
        },
        ..SimOptions::default()
    }
}

/// A gateway-sim on this runtime that knows the cards of `specs`.
pub(crate) async fn start(specs: Vec<SimCardSpec>) -> anyhow::Result<SimHandle> {
    let sim = SimServer::start(options())
        .await
        .context("start gateway-sim")?;
    register(&sim, specs)?;
    Ok(sim)
}

/// Adds the cards of `specs` to `sim` (or replaces them).
pub(crate) fn register(sim: &SimHandle, specs: Vec<SimCardSpec>) -> anyhow::Result<()> {
    sim.state()
        .upsert_cards(specs)
        .map_err(|e| anyhow::anyhow!("register cards in gateway-sim: {e}"))?;
    Ok(())
}
