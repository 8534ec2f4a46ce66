//! `gateway-sim`: an in-memory carrier that speaks the gateway protocol, for tests, benchmarks
//! and the demo.
//!
//! Start it in-process with [`SimServer::start`] (port 0 by default) or as the binary
//! `gateway-sim serve --bind ADDR`. Besides the protocol it answers the control API of
//! `docs/carriers/cmp-json.md` ("The simulator"):
//!
//! | call | body / answer |
//! | --- | --- |
//! | `POST /sim/cards` | `{cards: [SimCardSpec]}`, up to 100,000 a call, replaces existing |
//! | `GET /sim/cards/{iccid}` | [`SimCardView`]: the state plus `stop_calls`, `start_calls` |
//! | `PATCH /sim/cards/{iccid}` | [`SimCardPatch`]: any field |
//! | `PUT /sim/faults`, `GET /sim/faults` | [`FaultsPatch`] in (absent = unchanged), [`Faults`] out |
//! | `PUT /sim/script` | [`Script`]: `{fail_next: [503, 503], call: "stop"}`, one-shot failures |
//! | `GET /sim/stats` | [`SimStats`] |
//!
//! Usage is deterministic: the n-th usage query of a card answers `month_total_mb + n *
//! growth_mb_per_query` (0 keeps it fixed); a card registered without a growth gets one drawn
//! from the seed and its ICCID. Injected faults draw from a sequence fixed by the seed. The
//! month is the sim clock's, in the sim's time zone (default `Asia/Shanghai`); quotas and the
//! per-second stats use the wall clock, since they are about real rates.
//!
//! Order of faults on a protocol request: count it, then the script, the quota (429), the
//! latency, the timeout rate (hang, then 504), the throttle rate (429 + `Retry-After`), the
//! error rate (503), and finally the card (404 when unknown).

mod accounts;
mod cards;
mod control;
mod faults;
mod fleet;
mod inject;
pub mod protocols;
mod routes;
mod stats;

pub use accounts::{SimAccount, SimAccountPatch};
pub use control::SimControl;
pub use faults::{Faults, FaultsPatch, Hang, Malformed, Script, ScriptStep};
pub use fleet::{SimCardPatch, SimCardSpec, SimCardView};
pub use stats::{SecondCount, SimStats};

use anyhow::Context;
use chrono::Datelike;
use chrono_tz::Tz;
use domain::{Clock, SystemClock};
use faults::FaultState;
use fleet::{Fleet, MonthKey, month_key};
use stats::Stats;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// Most cards one `POST /sim/cards` may carry.
pub const MAX_CARDS_PER_CALL: usize = 100_000;

/// SplitMix64's finaliser: a fast, well-mixed, stable hash of a `u64`.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How to start a simulator.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Default `127.0.0.1:0`: a free port, read it from [`SimHandle::addr`].
    pub bind: SocketAddr,
    /// Fixes the seeded growth of cards registered without one and the fault draws.
    pub seed: u64,
    /// The faults at start; change them later with [`SimState::set_faults`] or `PUT /sim/faults`.
    pub faults: Faults,
    /// The carrier's time zone: the `month` of usage answers.
    pub timezone: Tz,
    /// The carrier's clock (the month of usage answers); tests pin it with `ManualClock`.
    pub clock: Arc<dyn Clock>,
    /// `None`: the project's own protocol at the root and every real platform on its prefix
    /// ([`protocols::prefix`]); `Some(p)`: platform `p` alone, at the root.
    pub protocol: Option<domain::CarrierProtocol>,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            seed: 42,
            faults: Faults::default(),
            timezone: chrono_tz::Asia::Shanghai,
            clock: Arc::new(SystemClock),
            protocol: None,
        }
    }
}

/// The simulator's whole state; cheap to clone (clones share it). Tests running the simulator
/// in-process may drive it through these methods instead of the HTTP control API.
#[derive(Clone)]
pub struct SimState(Arc<Inner>);

struct Inner {
    fleet: Fleet,
    faults: FaultState,
    stats: Stats,
    accounts: accounts::Accounts,
    timezone: Tz,
    clock: Arc<dyn Clock>,
    /// Ends hanging requests at shutdown.
    cancel: CancellationToken,
}

impl std::fmt::Debug for SimState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimState")
            .field("faults", &self.faults())
            .finish_non_exhaustive()
    }
}

pub(crate) fn wall_second() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl SimState {
    pub fn new(opts: &SimOptions) -> Self {
        Self(Arc::new(Inner {
            fleet: Fleet::new(opts.seed),
            faults: FaultState::new(opts.faults, opts.seed),
            stats: Stats::new(),
            accounts: accounts::Accounts::new(opts.seed),
            timezone: opts.timezone,
            clock: opts.clock.clone(),
            cancel: CancellationToken::new(),
        }))
    }

    /// The sim's current month in its time zone.
    pub(crate) fn current_month(&self) -> MonthKey {
        let now = self.0.clock.now().with_timezone(&self.0.timezone);
        month_key(now.year(), now.month())
    }

    fn resolve_month(&self, m: Option<&str>) -> Result<MonthKey, String> {
        match m {
            None => Ok(self.current_month()),
            Some(s) => gateway::protocol::parse_month(s)
                .map(|d| month_key(d.year(), d.month()))
                .ok_or_else(|| format!("month must be YYYY-MM, got `{s}`")),
        }
    }

    /// Registers cards, replacing those with the same ICCID. Refuses the whole batch (naming
    /// the first bad card) when an ICCID is empty or a month is malformed.
    pub fn upsert_cards(&self, cards: Vec<SimCardSpec>) -> Result<usize, String> {
        let mut resolved = Vec::with_capacity(cards.len());
        for (i, c) in cards.into_iter().enumerate() {
            if c.iccid.is_empty() || c.iccid.len() > 64 {
                return Err(format!("cards[{i}]: iccid must have 1 to 64 characters"));
            }
            let month = self
                .resolve_month(c.month.as_deref())
                .map_err(|e| format!("cards[{i}]: {e}"))?;
            resolved.push((c, month));
        }
        Ok(self.0.fleet.upsert(resolved))
    }

    /// The card's state and counters; `None`: unknown.
    pub fn card(&self, iccid: &str) -> Option<SimCardView> {
        self.0.fleet.view(iccid)
    }

    /// Changes fields of a card; `Ok(None)`: unknown card.
    pub fn patch_card(
        &self,
        iccid: &str,
        patch: SimCardPatch,
    ) -> Result<Option<SimCardView>, String> {
        let month = match patch.month.as_deref() {
            Some(m) => Some(self.resolve_month(Some(m))?),
            None => None,
        };
        Ok(self.0.fleet.patch(iccid, patch, month))
    }

    pub fn card_count(&self) -> usize {
        self.0.fleet.len()
    }

    pub fn faults(&self) -> Faults {
        self.0.faults.get()
    }

    /// Changes the given knobs; refuses rates outside `0..=1`.
    pub fn set_faults(&self, patch: FaultsPatch) -> Result<Faults, String> {
        patch.validate()?;
        Ok(self.0.faults.apply(patch))
    }

    /// Replaces the one-shot failure script; answers the number of pending steps.
    pub fn set_script(&self, script: Script) -> usize {
        self.0.faults.set_script(script)
    }

    /// The platform account the simulator accepts for `protocol`.
    pub fn account(&self, protocol: domain::CarrierProtocol) -> SimAccount {
        self.0.accounts.get(protocol)
    }

    /// Changes the given fields of `protocol`'s account.
    pub fn set_account(
        &self,
        protocol: domain::CarrierProtocol,
        patch: SimAccountPatch,
    ) -> SimAccount {
        self.0.accounts.patch(protocol, patch)
    }

    /// Makes every token issued for `protocol` expire now; answers how many there were.
    pub fn expire_tokens(&self, protocol: domain::CarrierProtocol) -> usize {
        self.0.accounts.expire_tokens(protocol)
    }

    pub fn stats(&self) -> SimStats {
        self.0
            .stats
            .snapshot(wall_second(), self.card_count() as u64)
    }
}

/// Starts simulators.
#[derive(Debug, Clone, Copy)]
pub struct SimServer;

impl SimServer {
    /// Binds `opts.bind` and serves until [`SimHandle::shutdown`] (or the handle is dropped).
    pub async fn start(opts: SimOptions) -> anyhow::Result<SimHandle> {
        let listener = tokio::net::TcpListener::bind(opts.bind)
            .await
            .with_context(|| format!("binding gateway-sim to {}", opts.bind))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let state = SimState::new(&opts);
        let cancel = state.0.cancel.clone();
        let app = routes::router(state.clone(), opts.protocol);
        let stop = cancel.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
        });
        info!(%addr, seed = opts.seed, timezone = %opts.timezone, "gateway-sim listening");
        Ok(SimHandle {
            addr,
            state,
            cancel,
            task: Some(task),
        })
    }

    /// The router alone, for `oneshot` tests or embedding.
    pub fn router(state: SimState) -> axum::Router {
        routes::router(state, None)
    }
}

/// A running simulator. Dropping it stops it too (without waiting).
#[derive(Debug)]
pub struct SimHandle {
    /// The bound address (the real port when bound to 0).
    pub addr: SocketAddr,
    state: SimState,
    cancel: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl SimHandle {
    /// `http://{addr}`: the `base_url` of a client.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The API root of `protocol` on this simulator when every platform is served (the
    /// default): `http://{addr}{prefix}`.
    pub fn url_of(&self, protocol: domain::CarrierProtocol) -> String {
        format!("http://{}{}", self.addr, protocols::prefix(protocol))
    }

    /// The simulator's state, to drive it in-process.
    pub fn state(&self) -> &SimState {
        &self.state
    }

    /// Stops accepting, ends hanging requests, and waits (up to 5 s) for open connections.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            match tokio::time::timeout(Duration::from_secs(5), task).await {
                Ok(joined) => joined
                    .context("gateway-sim task")?
                    .context("gateway-sim server")?,
                Err(_) => anyhow::bail!("gateway-sim did not stop within 5 s"),
            }
        }
        info!(addr = %self.addr, "gateway-sim stopped");
        Ok(())
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
