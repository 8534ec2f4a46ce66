//! The platforms' side of authentication and rationing: per protocol, the account the simulator
//! accepts (its credentials), the tokens it issued and when they lapse, the platform's own rate
//! and concurrency limits, its batch and page limits, and the change lock of card status.
//!
//! Defaults: the credentials of [`SimAccount::default_for`] (documented in each protocol's page
//! in `docs/carriers/`), tokens living an hour, no rate or concurrency limit (set the platform's
//! published figures with `PUT /sim/accounts/{protocol}` when a test or the demo wants them).

use domain::CarrierProtocol;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One protocol's account on the simulated platform (`GET/PUT /sim/accounts/{protocol}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimAccount {
    /// The credential fields the platform accepts, by the names of
    /// `CarrierProtocol::credential_fields`.
    pub credentials: BTreeMap<String, String>,
    /// Lifetime of an issued token (OneLink token, 1NCE access token, emnify JWT). 0: less
    /// than a second left (the token is valid for 900 ms and its answer says 0 seconds).
    pub token_ttl_secs: u64,
    /// Requests a wall-clock second the platform answers; beyond, its throttling answer. 0 = none.
    pub rate_limit_per_sec: u64,
    /// Requests in flight the platform accepts; beyond, its throttling answer. 0 = none.
    pub max_concurrent: u64,
    /// Most cards one batch request may name.
    pub batch_limit: usize,
    /// Most items one page of a list may hold.
    pub page_size_max: usize,
    /// A second status change of one card within this many seconds is refused (OneLink). 0 = none.
    pub change_lock_secs: u64,
    /// Whether the platform serves the calls its page marks *assumed* (no public source shows
    /// them: OneLink's `query/.../batch` queries). Off by default: they answer HTTP 404, as a
    /// platform without them would. Turn on to test the adapter's opt-in path.
    #[serde(default)]
    pub assumed_calls: bool,
}

impl SimAccount {
    /// The account a fresh simulator accepts for `protocol`.
    pub fn default_for(protocol: CarrierProtocol) -> Self {
        let creds: &[(&str, &str)] = match protocol {
            CarrierProtocol::CmpJson => &[],
            CarrierProtocol::OneLink => &[
                ("appid", "sim-onelink-appid"),
                ("password", "sim-onelink-password"),
            ],
            CarrierProtocol::Ctcc5gcmp => &[
                ("app_key", "sim-ctcc-app-key"),
                ("secret", "sim-ctcc-secret"),
            ],
            CarrierProtocol::ControlCenter => {
                &[("username", "sim-cc-user"), ("api_key", "sim-cc-api-key")]
            }
            CarrierProtocol::OneNce => &[
                ("client_id", "sim-1nce-client"),
                ("client_secret", "sim-1nce-secret"),
            ],
            CarrierProtocol::Emnify => &[("application_token", "sim-emnify-application-token")],
        };
        let (batch_limit, page_size_max) = match protocol {
            CarrierProtocol::ControlCenter => (1, 50),
            CarrierProtocol::Emnify => (1, 1000),
            _ => (100, 100),
        };
        Self {
            credentials: creds
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            token_ttl_secs: 3600,
            rate_limit_per_sec: 0,
            max_concurrent: 0,
            batch_limit,
            page_size_max,
            change_lock_secs: if protocol == CarrierProtocol::OneLink {
                300
            } else {
                0
            },
            assumed_calls: false,
        }
    }
}

/// `PUT /sim/accounts/{protocol}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimAccountPatch {
    pub credentials: Option<BTreeMap<String, String>>,
    pub token_ttl_secs: Option<u64>,
    pub rate_limit_per_sec: Option<u64>,
    pub max_concurrent: Option<u64>,
    pub batch_limit: Option<usize>,
    pub page_size_max: Option<usize>,
    pub change_lock_secs: Option<u64>,
    pub assumed_calls: Option<bool>,
}

/// How long a token issued with `token_ttl_secs` 0 (answered as 0 seconds) is valid.
const ZERO_TTL_LIFETIME: Duration = Duration::from_millis(900);

/// What the platform makes of a presented token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenCheck {
    Valid,
    Expired,
    Unknown,
}

#[derive(Debug)]
struct AccountState {
    account: SimAccount,
    tokens: HashMap<String, Instant>,
    /// (wall second, requests in it) for the rate limit.
    window: (u64, u64),
    /// Last status change per card, for the change lock.
    last_change: HashMap<String, Instant>,
}

/// Every protocol's account; cheap to share.
#[derive(Debug, Clone)]
pub(crate) struct Accounts {
    states: Arc<HashMap<CarrierProtocol, Mutex<AccountState>>>,
    in_flight: Arc<HashMap<CarrierProtocol, AtomicU64>>,
    issued: Arc<AtomicU64>,
    seed: u64,
}

/// Holds one of the platform's concurrent-request places until dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    counter: Arc<HashMap<CarrierProtocol, AtomicU64>>,
    protocol: CarrierProtocol,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(c) = self.counter.get(&self.protocol) {
            c.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Accounts {
    pub(crate) fn new(seed: u64) -> Self {
        let states = CarrierProtocol::ALL
            .iter()
            .map(|p| {
                (
                    *p,
                    Mutex::new(AccountState {
                        account: SimAccount::default_for(*p),
                        tokens: HashMap::new(),
                        window: (0, 0),
                        last_change: HashMap::new(),
                    }),
                )
            })
            .collect();
        let in_flight = CarrierProtocol::ALL
            .iter()
            .map(|p| (*p, AtomicU64::new(0)))
            .collect();
        Self {
            states: Arc::new(states),
            in_flight: Arc::new(in_flight),
            issued: Arc::new(AtomicU64::new(0)),
            seed,
        }
    }

    fn with<R>(&self, p: CarrierProtocol, f: impl FnOnce(&mut AccountState) -> R) -> R {
        let m = self.states.get(&p).expect("every protocol has an account");
        let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut s)
    }

    pub(crate) fn get(&self, p: CarrierProtocol) -> SimAccount {
        self.with(p, |s| s.account.clone())
    }

    pub(crate) fn patch(&self, p: CarrierProtocol, patch: SimAccountPatch) -> SimAccount {
        self.with(p, |s| {
            let a = &mut s.account;
            if let Some(v) = patch.credentials {
                a.credentials = v;
            }
            if let Some(v) = patch.token_ttl_secs {
                a.token_ttl_secs = v;
            }
            if let Some(v) = patch.rate_limit_per_sec {
                a.rate_limit_per_sec = v;
            }
            if let Some(v) = patch.max_concurrent {
                a.max_concurrent = v;
            }
            if let Some(v) = patch.batch_limit {
                a.batch_limit = v.max(1);
            }
            if let Some(v) = patch.page_size_max {
                a.page_size_max = v.max(1);
            }
            if let Some(v) = patch.change_lock_secs {
                a.change_lock_secs = v;
            }
            if let Some(v) = patch.assumed_calls {
                a.assumed_calls = v;
            }
            a.clone()
        })
    }

    /// Whether `field` of the account equals `given` (a missing field never matches).
    pub(crate) fn credential_is(&self, p: CarrierProtocol, field: &str, given: &str) -> bool {
        self.with(p, |s| {
            s.account.credentials.get(field).is_some_and(|v| v == given)
        })
    }

    /// The account's value of `field` (e.g. a signing secret the simulator must recompute with).
    pub(crate) fn credential(&self, p: CarrierProtocol, field: &str) -> Option<String> {
        self.with(p, |s| s.account.credentials.get(field).cloned())
    }

    /// Issues a token living `token_ttl_secs`; answers it and its lifetime.
    pub(crate) fn issue_token(&self, p: CarrierProtocol) -> (String, Duration) {
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        let token = format!(
            "{:016x}{:016x}",
            super::mix64(self.seed ^ n),
            super::mix64(n.wrapping_add(0x5151))
        );
        self.with(p, |s| {
            let ttl = Duration::from_secs(s.account.token_ttl_secs);
            let lives = if ttl.is_zero() {
                ZERO_TTL_LIFETIME
            } else {
                ttl
            };
            let now = Instant::now();
            s.tokens.retain(|_, exp| *exp > now);
            s.tokens.insert(token.clone(), now + lives);
            (token, ttl)
        })
    }

    pub(crate) fn check_token(&self, p: CarrierProtocol, token: &str) -> TokenCheck {
        self.with(p, |s| match s.tokens.get(token) {
            Some(exp) if *exp > Instant::now() => TokenCheck::Valid,
            Some(_) => TokenCheck::Expired,
            None => TokenCheck::Unknown,
        })
    }

    /// Makes every token of `p` expire now (a token expiring mid-run); answers how many.
    pub(crate) fn expire_tokens(&self, p: CarrierProtocol) -> usize {
        self.with(p, |s| {
            let now = Instant::now();
            let n = s.tokens.len();
            for exp in s.tokens.values_mut() {
                *exp = now;
            }
            n
        })
    }

    /// Counts one request against the platform's per-second limit; `false`: over it.
    pub(crate) fn admit(&self, p: CarrierProtocol, now_sec: u64) -> bool {
        self.with(p, |s| {
            let limit = s.account.rate_limit_per_sec;
            if s.window.0 != now_sec {
                s.window = (now_sec, 0);
            }
            s.window.1 += 1;
            limit == 0 || s.window.1 <= limit
        })
    }

    /// Takes one of the platform's concurrent places; `None`: over `max_concurrent`.
    pub(crate) fn enter(&self, p: CarrierProtocol) -> Option<InFlight> {
        let max = self.with(p, |s| s.account.max_concurrent);
        let c = self.in_flight.get(&p)?;
        let now = c.fetch_add(1, Ordering::SeqCst) + 1;
        let guard = InFlight {
            counter: self.in_flight.clone(),
            protocol: p,
        };
        if max != 0 && now > max {
            drop(guard);
            return None;
        }
        Some(guard)
    }

    /// Records a status change of `iccid` unless one happened within `change_lock_secs`;
    /// `Err(seconds left)` when locked.
    pub(crate) fn take_change_lock(&self, p: CarrierProtocol, iccid: &str) -> Result<(), u64> {
        self.with(p, |s| {
            let lock = Duration::from_secs(s.account.change_lock_secs);
            let now = Instant::now();
            if !lock.is_zero()
                && let Some(at) = s.last_change.get(iccid)
            {
                let since = now.duration_since(*at);
                if since < lock {
                    return Err((lock - since).as_secs().max(1));
                }
            }
            s.last_change.retain(|_, at| now.duration_since(*at) < lock);
            if !lock.is_zero() {
                s.last_change.insert(iccid.to_owned(), now);
            }
            Ok(())
        })
    }
}
