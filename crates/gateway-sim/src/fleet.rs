//! The simulated carrier's cards: a sharded in-memory map keyed by ICCID.
//!
//! One card costs about 100 bytes plus its ICCID and packages, so a million fit in a few hundred
//! megabytes. Every change of a card happens under its shard's lock, which is never held across
//! an `.await`: counters are exact under any concurrency.

use super::mix64;
pub use crate::cards::{SimCardPatch, SimCardSpec, SimCardView};
use domain::{CarrierPackage, NetworkStatus, RealNameStatus};
use gateway::CallKind;
use rust_decimal::Decimal;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

const SHARDS: usize = 64;

/// Month as `year * 12 + month0`: 4 bytes, ordered.
pub(crate) type MonthKey = i32;

#[derive(Debug)]
struct SimCard {
    real_name: RealNameStatus,
    network: NetworkStatus,
    month: MonthKey,
    stop_calls: u32,
    start_calls: u32,
    stops_applied: u32,
    starts_applied: u32,
    usage_queries: u32,
    changed_ms: u64,
    month_total: Decimal,
    growth: Decimal,
    packages: Box<[CarrierPackage]>,
}

type Shard = HashMap<Box<str>, SimCard>;

pub(crate) struct Fleet {
    shards: Box<[Mutex<Shard>]>,
    seed: u64,
}

/// FNV-1a: stable across runs and platforms (the seeded growth depends on it).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Fleet {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            seed,
        }
    }

    fn shard_of(&self, iccid: &str) -> usize {
        (fnv1a(iccid) % SHARDS as u64) as usize
    }

    fn lock(&self, shard: usize) -> MutexGuard<'_, Shard> {
        // A poisoned shard still holds consistent cards: every change is a plain field write.
        self.shards[shard].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The growth of a card registered without one: 0.00 to 10.00 MB, from seed and ICCID.
    pub(crate) fn seeded_growth(&self, iccid: &str) -> Decimal {
        let cents = mix64(self.seed ^ fnv1a(iccid)) % 1001;
        Decimal::new(cents as i64, 2)
    }

    pub(crate) fn len(&self) -> usize {
        (0..SHARDS).map(|i| self.lock(i).len()).sum()
    }

    /// Inserts or replaces cards, each with its month (validated by the caller).
    pub(crate) fn upsert(&self, specs: Vec<(SimCardSpec, MonthKey)>) -> usize {
        let mut by_shard: Vec<Vec<(SimCardSpec, MonthKey)>> =
            (0..SHARDS).map(|_| Vec::new()).collect();
        let n = specs.len();
        for (spec, month) in specs {
            let s = self.shard_of(&spec.iccid);
            by_shard[s].push((spec, month));
        }
        for (i, batch) in by_shard.into_iter().enumerate() {
            if batch.is_empty() {
                continue;
            }
            let growth: Vec<Decimal> = batch
                .iter()
                .map(|(s, _)| {
                    s.growth_mb_per_query
                        .unwrap_or_else(|| self.seeded_growth(&s.iccid))
                })
                .collect();
            let mut shard = self.lock(i);
            shard.reserve(batch.len());
            for ((spec, month), growth) in batch.into_iter().zip(growth) {
                let card = SimCard {
                    real_name: spec.real_name_status,
                    network: spec.network_status,
                    month,
                    stop_calls: 0,
                    start_calls: 0,
                    stops_applied: 0,
                    starts_applied: 0,
                    usage_queries: 0,
                    changed_ms: now_ms(),
                    month_total: spec.month_total_mb,
                    growth,
                    packages: spec.packages.into_boxed_slice(),
                };
                shard.insert(spec.iccid.into_boxed_str(), card);
            }
        }
        n
    }

    fn with_card<R>(&self, iccid: &str, f: impl FnOnce(&mut SimCard) -> R) -> Option<R> {
        let mut shard = self.lock(self.shard_of(iccid));
        shard.get_mut(iccid).map(f)
    }

    pub(crate) fn view(&self, iccid: &str) -> Option<SimCardView> {
        self.with_card(iccid, |c| view_of(iccid, c))
    }

    pub(crate) fn patch(
        &self,
        iccid: &str,
        p: SimCardPatch,
        month: Option<MonthKey>,
    ) -> Option<SimCardView> {
        self.with_card(iccid, |c| {
            if let Some(v) = p.real_name_status {
                c.real_name = v;
            }
            if let Some(v) = p.network_status {
                c.network = v;
            }
            if let Some(v) = p.month_total_mb {
                c.month_total = v;
            }
            if let Some(v) = p.growth_mb_per_query {
                c.growth = v;
            }
            if let Some(v) = p.packages {
                c.packages = v.into_boxed_slice();
            }
            if let Some(m) = month {
                c.month = m;
            }
            c.changed_ms = now_ms();
            view_of(iccid, c)
        })
    }

    /// The card's network status, without counting anything.
    pub(crate) fn network(&self, iccid: &str) -> Option<NetworkStatus> {
        self.with_card(iccid, |c| c.network)
    }

    /// One page of the fleet ordered by ICCID, of the cards changed at or after
    /// `changed_since_ms` when given; answers the page and the number of matching cards.
    pub(crate) fn list(
        &self,
        offset: usize,
        limit: usize,
        changed_since_ms: Option<u64>,
    ) -> (Vec<SimCardView>, usize) {
        let mut all: Vec<SimCardView> = (0..SHARDS)
            .flat_map(|i| {
                self.lock(i)
                    .iter()
                    .filter(|(_, c)| changed_since_ms.is_none_or(|t| c.changed_ms >= t))
                    .map(|(k, c)| view_of(k, c))
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort_by(|a, b| a.iccid.cmp(&b.iccid));
        let total = all.len();
        let page = all.into_iter().skip(offset).take(limit).collect();
        (page, total)
    }

    /// Counts a stop/start request that names the card, before any fault is applied.
    pub(crate) fn count_command(&self, iccid: &str, kind: CallKind) {
        self.with_card(iccid, |c| match kind {
            CallKind::Stop => c.stop_calls = c.stop_calls.saturating_add(1),
            CallKind::Start => c.start_calls = c.start_calls.saturating_add(1),
            _ => {}
        });
    }

    pub(crate) fn realname(&self, iccid: &str) -> Option<RealNameStatus> {
        self.with_card(iccid, |c| c.real_name)
    }

    /// One usage query at `now_month`: a later month starts from 0, then the total grows.
    pub(crate) fn usage(&self, iccid: &str, now_month: MonthKey) -> Option<(MonthKey, Decimal)> {
        self.with_card(iccid, |c| {
            if now_month > c.month {
                c.month = now_month;
                c.month_total = Decimal::ZERO;
            }
            c.month_total += c.growth;
            c.usage_queries = c.usage_queries.saturating_add(1);
            (c.month, c.month_total)
        })
    }

    pub(crate) fn packages(&self, iccid: &str) -> Option<Vec<CarrierPackage>> {
        self.with_card(iccid, |c| c.packages.to_vec())
    }

    /// Applies a stop or start; answers the status after it.
    pub(crate) fn set_network(&self, iccid: &str, kind: CallKind) -> Option<NetworkStatus> {
        self.with_card(iccid, |c| {
            match kind {
                CallKind::Stop => {
                    c.network = NetworkStatus::Stopped;
                    c.stops_applied = c.stops_applied.saturating_add(1);
                }
                _ => {
                    c.network = NetworkStatus::Online;
                    c.starts_applied = c.starts_applied.saturating_add(1);
                }
            }
            c.changed_ms = now_ms();
            c.network
        })
    }
}

fn view_of(iccid: &str, c: &SimCard) -> SimCardView {
    SimCardView {
        iccid: iccid.to_owned(),
        real_name_status: c.real_name,
        network_status: c.network,
        month: month_string(c.month),
        month_total_mb: c.month_total,
        growth_mb_per_query: c.growth,
        packages: c.packages.to_vec(),
        stop_calls: c.stop_calls,
        start_calls: c.start_calls,
        stops_applied: c.stops_applied,
        starts_applied: c.starts_applied,
        usage_queries: c.usage_queries,
        changed_at_ms: c.changed_ms,
    }
}

/// Unix milliseconds of the wall clock.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub(crate) fn month_key(year: i32, month1: u32) -> MonthKey {
    year * 12 + month1 as i32 - 1
}

pub(crate) fn month_string(k: MonthKey) -> String {
    format!("{:04}-{:02}", k.div_euclid(12), k.rem_euclid(12) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn month_keys_round_trip() {
        assert_eq!(month_string(month_key(2026, 4)), "2026-04");
        assert_eq!(month_string(month_key(2026, 12)), "2026-12");
        assert!(month_key(2027, 1) > month_key(2026, 12));
    }

    #[test]
    fn seeded_growth_is_stable_and_bounded() {
        let a = Fleet::new(7);
        let b = Fleet::new(7);
        let c = Fleet::new(8);
        let g = a.seeded_growth("8986001");
        assert_eq!(g, b.seeded_growth("8986001"));
        assert!(g >= Decimal::ZERO && g <= Decimal::TEN);
        let differs =
            (0..20).any(|i| a.seeded_growth(&i.to_string()) != c.seeded_growth(&i.to_string()));
        assert!(differs);
    }

    #[test]
    fn usage_grows_and_rolls_over() {
        let f = Fleet::new(1);
        let mut spec = SimCardSpec::new("1");
        spec.month_total_mb = Decimal::new(100, 0);
        spec.growth_mb_per_query = Some(Decimal::new(15, 1));
        f.upsert(vec![(spec, month_key(2026, 3))]);
        assert_eq!(
            f.usage("1", month_key(2026, 3)),
            Some((month_key(2026, 3), Decimal::new(1015, 1)))
        );
        assert_eq!(
            f.usage("1", month_key(2026, 3)),
            Some((month_key(2026, 3), Decimal::new(1030, 1)))
        );
        assert_eq!(
            f.usage("1", month_key(2026, 4)),
            Some((month_key(2026, 4), Decimal::new(15, 1)))
        );
        assert_eq!(f.usage("2", month_key(2026, 4)), None);
    }
}
