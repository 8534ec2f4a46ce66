//! The worker binary's own Prometheus series (the crates' series are listed in their crates,
//! the queue check's in `lifecycle`; README's "Watching it" lists them all).

/// `cmp_clock_offset_seconds`: this node's wall clock minus the Redis server's, measured every
/// `RedisClock::FOLLOW_EVERY`. Queue scores follow the server whatever it says; a large value
/// means the node's NTP is broken (logs and the database's `updated_at` use other clocks).
pub(crate) const CLOCK_OFFSET: &str = "cmp_clock_offset_seconds";
