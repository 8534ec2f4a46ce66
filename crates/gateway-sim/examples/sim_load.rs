//! Load on gateway-sim: registers cards through `/sim/cards`, then hammers `usage` with
//! concurrent callers over one pooled client and prints requests per second.
//!
//! ```text
//! cargo build --release -p gateway-sim --bin gateway-sim --example sim_load
//! gateway-sim serve --bind 127.0.0.1:7171 &
//! sim_load --url http://127.0.0.1:7171 --cards 1000000 --concurrency 64 --secs 10
//! grep VmRSS /proc/$(pgrep -n gateway-sim)/status
//! ```
//! Without `--url` the simulator runs in this process (sharing its cores with the callers).

use anyhow::Context;
use clap::Parser;
use domain::CarrierId;
use gateway::{CarrierGateway, GatewayConfig, HttpGateway};
use gateway_sim::{MAX_CARDS_PER_CALL, SimCardSpec, SimControl, SimOptions, SimServer};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// A running simulator; absent: start one in-process.
    #[arg(long)]
    url: Option<String>,
    /// Cards to register (the callers query the first 100,000 at most).
    #[arg(long, default_value_t = 10_000)]
    cards: usize,
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    #[arg(long, default_value_t = 10)]
    secs: u64,
}

fn iccid(i: usize) -> String {
    format!("8986{i:016}")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (url, _local) = match args.url.clone() {
        Some(u) => (u, None),
        None => {
            let sim = SimServer::start(SimOptions::default()).await?;
            (sim.url(), Some(sim))
        }
    };

    let ctl = SimControl::new(url.clone())?;
    let started = Instant::now();
    let mut next = 0;
    while next < args.cards {
        let end = (next + MAX_CARDS_PER_CALL).min(args.cards);
        let batch: Vec<SimCardSpec> = (next..end)
            .map(|i| SimCardSpec {
                growth_mb_per_query: None,
                ..SimCardSpec::new(iccid(i))
            })
            .collect();
        ctl.put_cards(&batch).await.context("registering cards")?;
        next = end;
    }
    println!(
        "registered {} cards in {:.1} s",
        args.cards,
        started.elapsed().as_secs_f64()
    );

    let gw = HttpGateway::new(GatewayConfig::new(url), None)?;
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let queried = args.cards.clamp(1, 100_000);
    let until = Instant::now() + Duration::from_secs(args.secs);
    let started = Instant::now();
    let tasks: Vec<_> = (0..args.concurrency)
        .map(|w| {
            let (gw, ok, failed) = (gw.clone(), ok.clone(), failed.clone());
            tokio::spawn(async move {
                let mut i = w;
                while Instant::now() < until {
                    match gw.usage(CarrierId(1), &iccid(i % queried)).await {
                        Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                    i += args.concurrency;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.context("caller task")?;
    }
    let secs = started.elapsed().as_secs_f64();
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    println!(
        "usage: {ok} ok, {failed} failed in {secs:.1} s with {} callers: {:.0} requests/s",
        args.concurrency,
        (ok + failed) as f64 / secs
    );
    Ok(())
}
