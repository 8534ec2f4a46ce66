//! One fault path for every protocol: [`inject`] runs the injected faults of a request in the
//! order of the crate doc, and [`Injected`] says which one struck, for each protocol to render in
//! its own words.

use super::SimState;
use super::faults::{Roll, ScriptStep};
use super::stats::Outcome;
use super::wall_second;
use gateway::CallKind;

/// A fault injected into a protocol request, for the protocol to render in its own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Injected {
    /// The request hung until `hang_ms` (or shutdown): answer 504.
    TimedOut,
    /// A scripted HTTP status (429 carries `retry_after_secs`).
    Status(u16),
    /// Throttled by the throttle rate (`Retry-After: retry_after_secs`).
    Throttled { retry_after_secs: u64 },
    /// Over the simulator's `quota_per_sec`.
    OverQuota,
    /// The error rate: the carrier is unavailable (503).
    Unavailable,
    /// A scripted malformed success answer.
    Malformed(super::faults::Malformed),
}

impl Injected {
    /// The stats outcome of the fault.
    pub(crate) fn outcome(self) -> Outcome {
        match self {
            Injected::TimedOut => Outcome::Timeout,
            Injected::Status(429) | Injected::Throttled { .. } => Outcome::Throttled,
            Injected::Status(404) => Outcome::NotFound,
            Injected::Status(_) | Injected::Unavailable | Injected::Malformed(_) => Outcome::Error,
            Injected::OverQuota => Outcome::OverQuota,
        }
    }
}

/// Runs the faults of one protocol request in the order of the crate doc: the script, the
/// quota, the latency, the timeout rate (the hang happens here), the throttle rate, the error
/// rate. `None`: answer normally. Every protocol calls it once per request.
pub(crate) async fn inject(st: &SimState, kind: CallKind) -> Option<Injected> {
    let faults = &st.0.faults;
    if let Some(step) = faults.next_scripted(kind) {
        return Some(match step {
            ScriptStep::Hang(_) => {
                hold(st).await;
                Injected::TimedOut
            }
            ScriptStep::Status(code) => Injected::Status(code),
            ScriptStep::Malformed(m) => Injected::Malformed(m),
        });
    }
    if !faults.within_quota(wall_second()) {
        return Some(Injected::OverQuota);
    }
    let latency = faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if faults.roll(Roll::Timeout) {
        hold(st).await;
        return Some(Injected::TimedOut);
    }
    if faults.roll(Roll::Throttle) {
        return Some(Injected::Throttled {
            retry_after_secs: faults.retry_after_secs(),
        });
    }
    if faults.roll(Roll::Error) {
        return Some(Injected::Unavailable);
    }
    None
}

/// The `Retry-After` of scripted throttling.
pub(crate) fn retry_after_secs(st: &SimState) -> u64 {
    st.0.faults.retry_after_secs()
}

/// Holds a request (not the server) until `hang_ms` or shutdown.
async fn hold(st: &SimState) {
    tokio::select! {
        () = tokio::time::sleep(st.0.faults.hang()) => {}
        () = st.0.cancel.cancelled() => {}
    }
}
