//! What the simulator counts: requests per call kind and outcome, and per wall-clock second.

use gateway::CallKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const WINDOW: usize = 60;

/// How a protocol request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    NotFound,
    Throttled,
    OverQuota,
    Error,
    Timeout,
    BadRequest,
}

impl Outcome {
    const ALL: [Outcome; 7] = [
        Outcome::Ok,
        Outcome::NotFound,
        Outcome::Throttled,
        Outcome::OverQuota,
        Outcome::Error,
        Outcome::Timeout,
        Outcome::BadRequest,
    ];

    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::NotFound => "not_found",
            Outcome::Throttled => "throttled",
            Outcome::OverQuota => "over_quota",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::BadRequest => "bad_request",
        }
    }
}

/// `GET /sim/stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimStats {
    /// Protocol requests received (counted on arrival, before any fault).
    pub requests: u64,
    /// Per call kind: `realname`, `usage`, `packages`, `stop`, `start`.
    pub by_call: BTreeMap<String, u64>,
    /// Per outcome: `ok`, `not_found`, `throttled`, `over_quota`, `error`, `timeout`,
    /// `bad_request` (requests still hanging have none yet).
    pub by_outcome: BTreeMap<String, u64>,
    /// Requests that arrived in each of the last 60 wall-clock seconds, oldest first, the
    /// current (partial) second last.
    pub per_second: Vec<SecondCount>,
    /// Cards registered.
    pub cards: u64,
}

/// Requests that arrived during one wall-clock second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecondCount {
    /// Unix seconds.
    pub second: u64,
    pub requests: u64,
}

pub(crate) struct Stats {
    by_call: [AtomicU64; 5],
    by_outcome: [AtomicU64; 7],
    /// Slot `second % 60` holds `(second, count)`.
    seconds: Mutex<[(u64, u64); WINDOW]>,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Self {
            by_call: Default::default(),
            by_outcome: Default::default(),
            seconds: Mutex::new([(0, 0); WINDOW]),
        }
    }

    pub(crate) fn arrived(&self, kind: CallKind, now_sec: u64) {
        self.by_call[kind.index()].fetch_add(1, Ordering::Relaxed);
        let mut s = self.seconds.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut s[(now_sec % WINDOW as u64) as usize];
        if slot.0 != now_sec {
            *slot = (now_sec, 0);
        }
        slot.1 += 1;
    }

    pub(crate) fn ended(&self, outcome: Outcome) {
        let i = Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(0);
        self.by_outcome[i].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, now_sec: u64, cards: u64) -> SimStats {
        let by_call: BTreeMap<String, u64> = CallKind::ALL
            .iter()
            .map(|k| {
                (
                    k.as_str().to_owned(),
                    self.by_call[k.index()].load(Ordering::Relaxed),
                )
            })
            .collect();
        let by_outcome = Outcome::ALL
            .iter()
            .zip(&self.by_outcome)
            .map(|(o, n)| (o.as_str().to_owned(), n.load(Ordering::Relaxed)))
            .collect();
        let s = *self.seconds.lock().unwrap_or_else(|p| p.into_inner());
        let per_second = (0..WINDOW as u64)
            .rev()
            .filter_map(|back| now_sec.checked_sub(back))
            .map(|second| {
                let slot = s[(second % WINDOW as u64) as usize];
                SecondCount {
                    second,
                    requests: if slot.0 == second { slot.1 } else { 0 },
                }
            })
            .collect();
        SimStats {
            requests: by_call.values().sum(),
            by_call,
            by_outcome,
            per_second,
            cards,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_window_keeps_the_last_minute() {
        let s = Stats::new();
        s.arrived(CallKind::Usage, 1000);
        s.arrived(CallKind::Usage, 1000);
        s.arrived(CallKind::Stop, 1001);
        s.arrived(CallKind::Stop, 1070);
        let snap = s.snapshot(1070, 0);
        assert_eq!(snap.requests, 4);
        assert_eq!(snap.by_call["usage"], 2);
        assert_eq!(snap.per_second.len(), 60);
        assert_eq!(
            snap.per_second.last(),
            Some(&SecondCount {
                second: 1070,
                requests: 1
            })
        );
        assert!(
            snap.per_second
                .iter()
                .all(|c| c.second > 1010 && (c.second == 1070 || c.requests == 0))
        );
        let early = s.snapshot(1001, 0);
        assert!(early.per_second.contains(&SecondCount {
            second: 1000,
            requests: 2
        }));
    }
}
