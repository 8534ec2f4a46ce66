//! Injected faults: latency, error/throttle/timeout rates, a per-second quota, and a one-shot
//! script of failures for deterministic tests.

use super::mix64;
use gateway::CallKind;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The fault knobs (`PUT /sim/faults`, `gateway-sim serve --…`). Rates are probabilities per
/// protocol request, drawn from the simulator's seeded sequence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Faults {
    /// Added to every protocol request.
    pub latency_ms: u64,
    /// Uniform extra latency in `0..=jitter_ms`.
    pub jitter_ms: u64,
    /// Share of requests answered 503.
    pub error_rate: f64,
    /// Share of requests answered 429 with `Retry-After: retry_after_secs`.
    pub throttle_rate: f64,
    /// Share of requests that hang for `hang_ms` (then 504), far beyond any client timeout.
    pub timeout_rate: f64,
    /// Protocol requests accepted per wall-clock second; beyond, 429. 0 = no quota.
    pub quota_per_sec: u64,
    /// The `Retry-After` of injected throttling.
    pub retry_after_secs: u64,
    /// How long an injected timeout hangs.
    pub hang_ms: u64,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            latency_ms: 0,
            jitter_ms: 0,
            error_rate: 0.0,
            throttle_rate: 0.0,
            timeout_rate: 0.0,
            quota_per_sec: 0,
            retry_after_secs: 1,
            hang_ms: 60_000,
        }
    }
}

/// `PUT /sim/faults`: absent fields stay as they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsPatch {
    pub latency_ms: Option<u64>,
    pub jitter_ms: Option<u64>,
    pub error_rate: Option<f64>,
    pub throttle_rate: Option<f64>,
    pub timeout_rate: Option<f64>,
    pub quota_per_sec: Option<u64>,
    pub retry_after_secs: Option<u64>,
    pub hang_ms: Option<u64>,
}

impl FaultsPatch {
    /// Rates must lie in `0..=1`.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("error_rate", self.error_rate),
            ("throttle_rate", self.throttle_rate),
            ("timeout_rate", self.timeout_rate),
        ] {
            if let Some(r) = v
                && !(0.0..=1.0).contains(&r)
            {
                return Err(format!("{name} must lie in 0..=1, got {r}"));
            }
        }
        Ok(())
    }
}

/// The knobs as atomics: read on every request without a lock.
pub(crate) struct FaultState {
    latency_ms: AtomicU64,
    jitter_ms: AtomicU64,
    error_rate: AtomicU64,
    throttle_rate: AtomicU64,
    timeout_rate: AtomicU64,
    quota_per_sec: AtomicU64,
    retry_after_secs: AtomicU64,
    hang_ms: AtomicU64,
    /// The seeded draw sequence: draw `n` is `mix64(seed + n)`.
    seed: u64,
    draws: AtomicU64,
    quota_window: Mutex<(u64, u64)>,
    script: Mutex<VecDeque<(Option<CallKind>, ScriptStep)>>,
}

fn rate(a: &AtomicU64) -> f64 {
    f64::from_bits(a.load(Ordering::Relaxed))
}

impl FaultState {
    pub(crate) fn new(f: Faults, seed: u64) -> Self {
        let s = Self {
            latency_ms: AtomicU64::new(0),
            jitter_ms: AtomicU64::new(0),
            error_rate: AtomicU64::new(0),
            throttle_rate: AtomicU64::new(0),
            timeout_rate: AtomicU64::new(0),
            quota_per_sec: AtomicU64::new(0),
            retry_after_secs: AtomicU64::new(0),
            hang_ms: AtomicU64::new(0),
            seed,
            draws: AtomicU64::new(0),
            quota_window: Mutex::new((0, 0)),
            script: Mutex::new(VecDeque::new()),
        };
        s.store(f);
        s
    }

    fn store(&self, f: Faults) {
        let r = Ordering::Relaxed;
        self.latency_ms.store(f.latency_ms, r);
        self.jitter_ms.store(f.jitter_ms, r);
        self.error_rate
            .store(f.error_rate.clamp(0.0, 1.0).to_bits(), r);
        self.throttle_rate
            .store(f.throttle_rate.clamp(0.0, 1.0).to_bits(), r);
        self.timeout_rate
            .store(f.timeout_rate.clamp(0.0, 1.0).to_bits(), r);
        self.quota_per_sec.store(f.quota_per_sec, r);
        self.retry_after_secs.store(f.retry_after_secs, r);
        self.hang_ms.store(f.hang_ms, r);
    }

    pub(crate) fn get(&self) -> Faults {
        let r = Ordering::Relaxed;
        Faults {
            latency_ms: self.latency_ms.load(r),
            jitter_ms: self.jitter_ms.load(r),
            error_rate: rate(&self.error_rate),
            throttle_rate: rate(&self.throttle_rate),
            timeout_rate: rate(&self.timeout_rate),
            quota_per_sec: self.quota_per_sec.load(r),
            retry_after_secs: self.retry_after_secs.load(r),
            hang_ms: self.hang_ms.load(r),
        }
    }

    pub(crate) fn apply(&self, p: FaultsPatch) -> Faults {
        let mut f = self.get();
        f.latency_ms = p.latency_ms.unwrap_or(f.latency_ms);
        f.jitter_ms = p.jitter_ms.unwrap_or(f.jitter_ms);
        f.error_rate = p.error_rate.unwrap_or(f.error_rate);
        f.throttle_rate = p.throttle_rate.unwrap_or(f.throttle_rate);
        f.timeout_rate = p.timeout_rate.unwrap_or(f.timeout_rate);
        f.quota_per_sec = p.quota_per_sec.unwrap_or(f.quota_per_sec);
        f.retry_after_secs = p.retry_after_secs.unwrap_or(f.retry_after_secs);
        f.hang_ms = p.hang_ms.unwrap_or(f.hang_ms);
        self.store(f);
        f
    }

    /// The next draw of the seeded sequence, uniform in `[0, 1)`.
    pub(crate) fn draw(&self) -> f64 {
        let n = self.draws.fetch_add(1, Ordering::Relaxed);
        (mix64(self.seed.wrapping_add(n)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Latency to add to this request.
    pub(crate) fn latency(&self) -> Duration {
        let base = self.latency_ms.load(Ordering::Relaxed);
        let jitter = self.jitter_ms.load(Ordering::Relaxed);
        let extra = if jitter == 0 {
            0
        } else {
            (self.draw() * (jitter + 1) as f64) as u64
        };
        Duration::from_millis(base + extra.min(jitter))
    }

    pub(crate) fn roll(&self, which: Roll) -> bool {
        let r = match which {
            Roll::Timeout => rate(&self.timeout_rate),
            Roll::Throttle => rate(&self.throttle_rate),
            Roll::Error => rate(&self.error_rate),
        };
        r > 0.0 && self.draw() < r
    }

    /// Counts the request against the quota of wall-clock second `now_sec`; false: over quota.
    pub(crate) fn within_quota(&self, now_sec: u64) -> bool {
        let quota = self.quota_per_sec.load(Ordering::Relaxed);
        if quota == 0 {
            return true;
        }
        let mut w = self.quota_window.lock().unwrap_or_else(|p| p.into_inner());
        if w.0 != now_sec {
            *w = (now_sec, 0);
        }
        w.1 += 1;
        w.1 <= quota
    }

    pub(crate) fn retry_after_secs(&self) -> u64 {
        self.retry_after_secs.load(Ordering::Relaxed)
    }

    pub(crate) fn hang(&self) -> Duration {
        Duration::from_millis(self.hang_ms.load(Ordering::Relaxed))
    }

    /// Replaces the pending script; answers how many steps are pending.
    pub(crate) fn set_script(&self, s: Script) -> usize {
        let mut q = self.script.lock().unwrap_or_else(|p| p.into_inner());
        q.clear();
        q.extend(s.fail_next.into_iter().map(|step| (s.call, step)));
        q.len()
    }

    /// Takes the next scripted step meant for `kind`, if any.
    pub(crate) fn next_scripted(&self, kind: CallKind) -> Option<ScriptStep> {
        let mut q = self.script.lock().unwrap_or_else(|p| p.into_inner());
        let pos = q
            .iter()
            .position(|(call, _)| call.is_none_or(|c| c == kind))?;
        q.remove(pos).map(|(_, step)| step)
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Roll {
    Timeout,
    Throttle,
    Error,
}

/// `PUT /sim/script`: the next protocol requests (of `call` only, when given) fail as listed,
/// one step each, before any other fault is considered; then the simulator behaves as before.
/// A new script replaces the pending one; `{"fail_next": []}` clears it.
///
/// `{"fail_next": [503, 503], "call": "stop"}` makes the next two `stop` requests answer 503:
/// a client with three tries succeeds on its third.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub fail_next: Vec<ScriptStep>,
    #[serde(default)]
    pub call: Option<CallKind>,
}

/// One scripted failure: an HTTP status (429 carries `Retry-After`), or `"hang"` (an injected
/// timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScriptStep {
    Status(u16),
    Hang(Hang),
    /// A success answer that is wrong in the given way (the real platforms' protocols only;
    /// the project's own protocol answers these as 502).
    Malformed(Malformed),
}

/// The malformed answers a script can ask for: `"html"` (HTTP 200 with an HTML page, as a
/// platform's maintenance proxy sends), `"drop_last"` (a batch answer without its last card),
/// `"wrong_iccid"` (the answer names another card), `"unknown_status"` (a status value outside
/// the platform's documented table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Malformed {
    Html,
    DropLast,
    WrongIccid,
    UnknownStatus,
}

/// The word `"hang"` of a [`ScriptStep`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hang {
    Hang,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_seeded_and_uniform_enough() {
        let a = FaultState::new(Faults::default(), 3);
        let b = FaultState::new(Faults::default(), 3);
        let xs: Vec<f64> = (0..1000).map(|_| a.draw()).collect();
        let ys: Vec<f64> = (0..1000).map(|_| b.draw()).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let below_half = xs.iter().filter(|x| **x < 0.5).count();
        assert!((400..600).contains(&below_half));
    }

    #[test]
    fn quota_resets_each_second() {
        let f = FaultState::new(
            Faults {
                quota_per_sec: 2,
                ..Faults::default()
            },
            0,
        );
        assert!(f.within_quota(10) && f.within_quota(10));
        assert!(!f.within_quota(10));
        assert!(f.within_quota(11));
    }

    #[test]
    fn script_steps_parse_and_filter_by_call() {
        let s: Script =
            serde_json::from_str(r#"{"fail_next":[503,"hang",429],"call":"stop"}"#).unwrap();
        let f = FaultState::new(Faults::default(), 0);
        assert_eq!(f.set_script(s), 3);
        assert_eq!(f.next_scripted(CallKind::Usage), None);
        assert_eq!(
            f.next_scripted(CallKind::Stop),
            Some(ScriptStep::Status(503))
        );
        assert_eq!(
            f.next_scripted(CallKind::Stop),
            Some(ScriptStep::Hang(Hang::Hang))
        );
        assert_eq!(
            f.next_scripted(CallKind::Stop),
            Some(ScriptStep::Status(429))
        );
        assert_eq!(f.next_scripted(CallKind::Stop), None);
    }

    #[test]
    fn bad_rates_are_refused() {
        assert!(
            FaultsPatch {
                error_rate: Some(1.5),
                ..Default::default()
            }
            .validate()
            .is_err()
        );
        assert!(
            FaultsPatch {
                timeout_rate: Some(f64::NAN),
                ..Default::default()
            }
            .validate()
            .is_err()
        );
        assert!(
            FaultsPatch {
                throttle_rate: Some(0.5),
                ..Default::default()
            }
            .validate()
            .is_ok()
        );
    }
}
