//! The worker binary's own Prometheus series (the crates' series are listed in their crates;
//! README's "Watching it" lists them all).

/// `cmp_clock_offset_seconds`: this node's wall clock minus the Redis server's, measured every
/// `RedisClock::FOLLOW_EVERY`. Queue scores follow the server whatever it says; a large value
/// means the node's NTP is broken (logs and the database's `updated_at` use other clocks).
pub(crate) const CLOCK_OFFSET: &str = "cmp_clock_offset_seconds";

/// `cmp_queue_check_entries{kind}`: queue entries the last periodic check found wrong, per
/// kind (`missing`, `unscheduled`, `not_live`, `wrong_shard`, as `cmp-worker check` prints
/// them). Nothing is repaired by the job: `cmp-worker check --repair` does that.
pub(crate) const QUEUE_CHECK_ENTRIES: &str = "cmp_queue_check_entries";
/// `cmp_queue_check_cards`: polling-enabled cards the last periodic check read.
pub(crate) const QUEUE_CHECK_CARDS: &str = "cmp_queue_check_cards";
/// `cmp_queue_check_members`: queue members the last periodic check read.
pub(crate) const QUEUE_CHECK_MEMBERS: &str = "cmp_queue_check_members";
/// `cmp_queue_check_completed_timestamp_seconds`: when the last periodic check ended (unix
/// seconds); with the interval it tells whether the other gauges are current.
pub(crate) const QUEUE_CHECK_COMPLETED: &str = "cmp_queue_check_completed_timestamp_seconds";
/// `cmp_queue_check_duration_seconds`: how long the last periodic check took.
pub(crate) const QUEUE_CHECK_DURATION: &str = "cmp_queue_check_duration_seconds";
