//! The budget seen from the dispatch loop: how many polls may start now so that the shared
//! budget is booked no further than a short horizon ahead.
//!
//! The queues are per task type, not per carrier, so the loop cannot tell whose budget a card
//! will spend before it reads the card. It asks for the carriers called in the last minute
//! (by this client, and the configured carriers the caller names, see [`Paced`]) and takes the
//! smallest room: with carriers of very different quotas, the slowest paces the dequeue of the
//! others while its budget is booked up (the cost of one queue per type; carrier-sharded queues
//! would lift it). A call of a batch-capable carrier carries up to `cards_per_call` cards, so
//! its free calls make that many times the room.

use super::HttpGateway;
use crate::GatewayError;
use domain::CarrierId;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tracing::warn;

/// A carrier not called for this long no longer paces the dispatch.
const FORGET_AFTER: Duration = Duration::from_secs(60);
/// A dispatched poll that has not reserved its query within this long never will (the card was
/// gone, disabled, or its poll failed before the call): it stops counting as pending.
const PENDING_FOR: Duration = Duration::from_secs(1);

/// Limited carriers called lately, with when; and the polls dispatched whose query has not
/// reserved its slot yet (the bucket does not show them, so the next round must not count
/// their slots as free).
#[derive(Debug, Default)]
pub(super) struct Seen {
    carriers: Mutex<HashMap<CarrierId, Instant>>,
    pending: Mutex<VecDeque<Instant>>,
}

impl Seen {
    pub(super) fn called(&self, carrier: CarrierId) {
        let mut seen = self.carriers.lock().unwrap_or_else(|p| p.into_inner());
        seen.insert(carrier, Instant::now());
    }

    /// A query reserved its slot: one pending poll fewer.
    pub(super) fn reserved(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.pop_front();
    }

    fn recent(&self) -> Vec<CarrierId> {
        let mut seen = self.carriers.lock().unwrap_or_else(|p| p.into_inner());
        seen.retain(|_, at| at.elapsed() < FORGET_AFTER);
        seen.keys().copied().collect()
    }

    fn pending(&self) -> usize {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        while pending
            .front()
            .is_some_and(|at| at.elapsed() >= PENDING_FOR)
        {
            pending.pop_front();
        }
        pending.len()
    }
}

/// A carrier budget the dispatch paces itself by: the bucket of `carrier` (cluster-wide, one
/// slot per call), its rate, and how many cards one call of the polls in question carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paced {
    pub carrier: CarrierId,
    pub rate: u32,
    pub cards_per_call: usize,
}

/// What the budget lets the dispatch start: `cards` polls now; with none, `free_in` is how long
/// until the fullest bucket has a slot within the horizon again (the loop sleeps that long
/// instead of asking again and again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchRoom {
    pub cards: usize,
    pub free_in: Duration,
}

impl HttpGateway {
    /// Polls the dispatch loop just handed to the handlers: until their queries reserve (or
    /// a second passes) they count against [`dispatch_room`](Self::dispatch_room).
    pub fn dispatched(&self, polls: usize) {
        let now = Instant::now();
        let mut pending = self.seen.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.extend(std::iter::repeat_n(now, polls));
    }

    /// `polls` dispatched polls made their query through another client on the same budget
    /// (a configured carrier's adapter, see `CarrierRouter::with_released`): they no longer
    /// count as pending.
    pub fn released(&self, polls: usize) {
        let mut pending = self.seen.pending.lock().unwrap_or_else(|p| p.into_inner());
        let n = polls.min(pending.len());
        pending.drain(..n);
    }

    /// How many calls may still be booked before the budget of a carrier this client called
    /// lately is booked `horizon` ahead (the smallest over those carriers; before any call,
    /// an idle bucket at the default rate), less the polls dispatched that have not reserved
    /// yet. `None` when no limit applies (no limiter or no rate set, or the limiter cannot
    /// answer: the calls themselves still reserve, failing open as they do).
    pub async fn dispatch_room(&self, horizon: Duration) -> Option<usize> {
        self.dispatch_room_with(horizon, &[])
            .await
            .map(|room| room.cards)
    }

    /// As [`dispatch_room`](Self::dispatch_room), also paced by `configured`: the carriers
    /// whose adapters reserve from the same limiter (the carrier router's accounts called
    /// lately), each free call counting `cards_per_call` cards.
    pub async fn dispatch_room_with(
        &self,
        horizon: Duration,
        configured: &[Paced],
    ) -> Option<DispatchRoom> {
        let limiter = self.limiter.as_ref()?;
        let pending = self.seen.pending();
        let mut paced: Vec<Paced> = self
            .seen
            .recent()
            .into_iter()
            .map(|carrier| Paced {
                carrier,
                rate: self.rate_of(carrier),
                cards_per_call: 1,
            })
            .collect();
        paced.extend(configured.iter().copied());
        if paced.is_empty() {
            let rate = self.config.rate_limit_per_sec;
            return (rate > 0).then(|| {
                let room = (horizon.as_secs_f64() * f64::from(rate)).ceil() as usize;
                DispatchRoom {
                    cards: room.saturating_sub(pending),
                    free_in: Duration::from_secs_f64(1.0 / f64::from(rate)),
                }
            });
        }
        let mut room: Option<usize> = None;
        let mut free_in = Duration::ZERO;
        for p in paced {
            if p.rate == 0 {
                continue;
            }
            let booked = match limiter.booked(&p.carrier.to_string()).await {
                Ok(booked) => booked,
                Err(error) => {
                    tracing::debug!(carrier = %p.carrier, %error, "budget unreadable; dispatching without it");
                    return None;
                }
            };
            // At least one while the horizon is not reached, however low the rate.
            let calls = (horizon.saturating_sub(booked).as_secs_f64() * f64::from(p.rate)).ceil();
            // A batch call goes out full only if its cards are waiting when its slot comes:
            // the room of a batch-capable carrier holds two batches beyond the horizon's calls
            // (they wait in the carrier's lane, not in the bucket).
            let calls = calls as usize
                + if p.cards_per_call > 1 && calls > 0.0 {
                    2
                } else {
                    0
                };
            let cards = calls.saturating_mul(p.cards_per_call.max(1));
            room = Some(room.map_or(cards, |r| r.min(cards)));
            if cards == 0 {
                // Room comes back as soon as the booking is under the horizon again. Not a
                // slot later: a loop that waited longer than one that just dispatched would
                // lose every slot to it (one task type served, the others starved).
                free_in = free_in.max(booked.saturating_sub(horizon) + Duration::from_millis(1));
            }
        }
        room.map(|room| {
            let cards = room.saturating_sub(pending);
            DispatchRoom {
                cards,
                free_in: if cards == 0 && free_in.is_zero() {
                    // Full of polls dispatched but not yet reserved: they reserve within a
                    // second or stop counting.
                    Duration::from_millis(20)
                } else {
                    free_in
                },
            }
        })
    }
}

/// Waits for a reserved slot of the carrier's budget. Fails open: when the limiter itself
/// cannot answer (Redis down), the call goes ahead; the carrier still enforces its quota with
/// refusals, which callers handle, and failing closed would halt every poll on a Redis blip.
pub(crate) async fn honour_slot(
    reserved: Result<Option<Duration>, domain::RateLimitError>,
    call: &str,
    carrier: CarrierId,
) -> Result<(), GatewayError> {
    match reserved {
        Ok(Some(wait)) => {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            Ok(())
        }
        Ok(None) => Err(GatewayError::RateLimited),
        Err(e) => {
            warn!(call, carrier = %carrier, error = %e, "rate limiter unavailable, calling without it");
            Ok(())
        }
    }
}
