//! [`RedisClock`]: a [`Clock`] that follows the Redis server's clock, so that the scores a
//! worker writes (reschedule at now + interval, retry, the usage race stamp) are on the same
//! clock the scripts compare them with (`TIME`), whatever this node's wall clock says.
//!
//! The offset is measured with `TIME` (the answer is taken as the server's time at the middle
//! of the round trip) and re-measured every [`RedisClock::follow`] period; in between, time
//! moves with this process's monotonic clock, never its wall clock. The clock never goes back:
//! a re-measurement that lands earlier than an answer already given holds at that answer until
//! the server's time catches up.

use crate::QueueError;
use chrono::{DateTime, TimeDelta, Utc};
use domain::Clock;
use fred::clients::Pool;
use fred::interfaces::ClientLike;
use fred::types::{ClusterHash, CustomCommand, Value};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The last measurement and the latest time handed out.
#[derive(Debug, Clone, Copy)]
struct State {
    /// The monotonic instant of the measurement.
    base: Instant,
    /// The server's time at `base`.
    at: DateTime<Utc>,
    /// The latest `now()` answered (the clock is monotonic).
    last: DateTime<Utc>,
}

/// The Redis server's time, read locally. Cheap: `now()` takes a mutex, no I/O.
#[derive(Debug)]
pub struct RedisClock {
    pool: Pool,
    state: Mutex<State>,
}

impl RedisClock {
    /// How often a worker re-measures the offset by default.
    pub const FOLLOW_EVERY: Duration = Duration::from_secs(15);

    /// A clock measured once against the server. When `TIME` cannot be read, it starts from
    /// this node's wall clock (logged) and corrects itself at the next [`sync`](Self::sync).
    pub async fn start(pool: Pool) -> Self {
        let now = Utc::now();
        let clock = Self {
            pool,
            state: Mutex::new(State {
                base: Instant::now(),
                at: now,
                last: now,
            }),
        };
        if let Err(error) = clock.sync().await {
            tracing::warn!(%error, "cannot read the Redis server's time; following the local clock until the next measurement");
        }
        clock
    }

    /// Measures the server's time again; answers the local wall clock's offset from it
    /// (positive: this node's wall clock is ahead).
    pub async fn sync(&self) -> Result<TimeDelta, QueueError> {
        let before = Instant::now();
        let (secs, micros): (i64, i64) = server_time(&self.pool).await?;
        let after = Instant::now();
        let base = before + (after - before) / 2;
        let at = DateTime::<Utc>::from_timestamp(secs, 0).unwrap_or_default()
            + TimeDelta::microseconds(micros);
        let offset = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.base = base;
            state.at = at;
            Utc::now() - (at + elapsed(base))
        };
        Ok(offset)
    }

    /// Re-measures every `every`, forever (the caller spawns it and aborts it on shutdown),
    /// handing each measured offset to `seen` (the worker exports it). A failed measurement
    /// keeps the previous one, with a warning.
    pub async fn follow(&self, every: Duration, seen: impl Fn(TimeDelta)) {
        loop {
            tokio::time::sleep(every).await;
            let measured = self.sync().await;
            if let Ok(offset) = &measured {
                seen(*offset);
            }
            match measured {
                Ok(offset) if offset.abs() > TimeDelta::seconds(1) => tracing::warn!(
                    offset_ms = offset.num_milliseconds(),
                    "this node's wall clock is off the Redis server's; queue scores follow the server"
                ),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "cannot read the Redis server's time; keeping the last measurement")
                }
            }
        }
    }
}

impl Clock for RedisClock {
    fn now(&self) -> DateTime<Utc> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let estimate = state.at + elapsed(state.base);
        if estimate > state.last {
            state.last = estimate;
        }
        state.last
    }
}

/// Time since `base` on the monotonic clock.
fn elapsed(base: Instant) -> TimeDelta {
    TimeDelta::from_std(base.elapsed()).unwrap_or_default()
}

/// `TIME`: seconds and microseconds.
async fn server_time(pool: &Pool) -> Result<(i64, i64), QueueError> {
    let time = CustomCommand::new_static("TIME", ClusterHash::Random, false);
    let (secs, micros): (String, String) = pool.next().custom(time, Vec::<Value>::new()).await?;
    let parse = |s: &str| {
        s.parse::<i64>().map_err(|e| QueueError::Corrupt {
            key: "TIME".to_owned(),
            detail: format!("`{s}` is not a number: {e}"),
            source: Some(domain::Cause::new(e)),
        })
    };
    Ok((parse(&secs)?, parse(&micros)?))
}
