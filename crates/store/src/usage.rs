//! The two writes of a poll that change facts the poll itself read: the usage counters and the
//! real-name status (group-committed: `batch/realname.rs`). Both decide on the database row at
//! write time, never on a caller's copy.
//!
//! `record_usage` (group-committed: `batch/usage.rs`) locks the card row (`SELECT … FOR
//! UPDATE`) and applies the carrier's report to the locked counters, so two polls of one card that overlap — four task types at once, a
//! manual trigger, a slow carrier answering the first poll after the second — are serialised
//! at the row: the second sees the first's baseline and counts only what is new. A snapshot
//! can never move a counter backwards, because no counter is ever written from a snapshot.
//! And a report is applied only if the carrier was asked after the counters were last written
//! (`usage_recorded_at`): of two overlapping polls the second writer has lost the race, and its
//! answer — possibly older than the one written — is left for the next poll instead of passing
//! for a carrier correction.
