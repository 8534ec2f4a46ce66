//! [`StopResumeSettings`]: the card lock's timing and the bounds of a stop or start.

use std::time::Duration;

/// Settings of the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopResumeSettings {
    /// TTL of `polling:lock:card:{id}`. The holder renews it every third of the TTL while it
    /// works, so it only bounds how long a lock outlives a holder that died.
    pub lock_ttl: Duration,
    /// How long an evaluation waits for a lock held by someone else before answering
    /// [`StopResumeError::Busy`]. Waiting (rather than failing at once) lets the second caller
    /// decide on the state the first one left, which is nearly always "nothing"; the bound keeps
    /// a handler slot from being held hostage by a slow carrier.
    pub lock_wait: Duration,
    /// Pause between two attempts to take a held lock.
    pub lock_retry: Duration,
    /// Longest a stop or start may wait for the carrier (the client's tries, back-offs and
    /// rate-limit waits included). A call still unanswered then is given up and its intent
    /// turned `interrupted` by its holder, so that no live call is ever older than this.
    /// The binaries set it from the gateway client's settings
    /// (`GatewayConfig::command_bound` plus a margin).
    pub call_deadline: Duration,
    /// What an intent may take beyond `call_deadline` (the database writes around the call).
    /// A `pending` row older than `call_deadline + intent_grace` by the database's clock has
    /// no live holder: the next evaluation of the card turns it `interrupted`.
    pub intent_grace: Duration,
}

impl StopResumeSettings {
    /// The defaults, with `call_deadline` 2 s above `command_bound`, the longest a stop or
    /// start can take by the gateway client's own timers (`GatewayConfig::command_bound`):
    /// the margin covers the scheduling of those timers, so a live call is not cut off.
    pub fn for_command_bound(command_bound: Duration) -> Self {
        Self {
            call_deadline: command_bound + Duration::from_secs(2),
            ..Self::default()
        }
    }

    /// Age after which a `pending` intent is known to have no live holder.
    pub fn intent_stale_after(&self) -> Duration {
        self.call_deadline + self.intent_grace
    }
}

impl Default for StopResumeSettings {
    fn default() -> Self {
        Self {
            lock_ttl: Duration::from_secs(30),
            lock_wait: Duration::from_secs(5),
            lock_retry: Duration::from_millis(25),
            // The client's defaults bound a command at 31 s (`GatewayConfig::command_bound`).
            call_deadline: Duration::from_secs(35),
            intent_grace: Duration::from_secs(15),
        }
    }
}
