//! The budget seen from the dispatch loop: how many polls may start now so that the shared
//! budget is booked no further than a short horizon ahead.
//!
//! The queues are per task type, not per carrier, so the loop cannot tell whose budget a card
//! will spend before it reads the card. It asks for the carriers this client called in the
//! last minute and takes the smallest room: with carriers of very different quotas, the
//! slowest paces the dequeue of the others while its budget is booked up (the cost of one
//! queue per type; carrier-sharded queues would lift it).

use super::HttpGateway;
use domain::CarrierId;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A carrier not called for this long no longer paces the dispatch.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// Limited carriers called lately, with when.
#[derive(Debug, Default)]
pub(super) struct Seen(Mutex<HashMap<CarrierId, Instant>>);

impl Seen {
    pub(super) fn called(&self, carrier: CarrierId) {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        seen.insert(carrier, Instant::now());
    }

    fn recent(&self) -> Vec<CarrierId> {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        seen.retain(|_, at| at.elapsed() < FORGET_AFTER);
        seen.keys().copied().collect()
    }
}

impl HttpGateway {
    /// How many calls may still be booked before the budget of a carrier this client called
    /// lately is booked `horizon` ahead (the smallest over those carriers); `None` when no
    /// limit applies (no limiter, no limited carrier called yet, or the limiter cannot answer:
    /// the calls themselves still reserve, failing open as they do).
    pub async fn dispatch_room(&self, horizon: Duration) -> Option<usize> {
        let limiter = self.limiter.as_ref()?;
        let mut room: Option<usize> = None;
        for carrier in self.seen.recent() {
            let rate = self.rate_of(carrier);
            if rate == 0 {
                continue;
            }
            let booked = match limiter.booked(&carrier.to_string()).await {
                Ok(booked) => booked,
                Err(error) => {
                    tracing::debug!(carrier = %carrier, %error, "budget unreadable; dispatching without it");
                    return None;
                }
            };
            let free = horizon.saturating_sub(booked).as_secs_f64() * f64::from(rate);
            let free = free.floor() as usize;
            room = Some(room.map_or(free, |r| r.min(free)));
        }
        room
    }
}
