//! The Lua scripts, one `.lua` file each, and the only way to run them.
//!
//! Every script touches exactly one key (`KEYS[1]`) so the layout runs unchanged on Redis
//! Cluster; [`eval`] takes a single key to keep it that way. Every script that decides "due" or
//! "lease ended" reads the Redis server's clock (`TIME`) itself: no caller passes its own now.

use fred::clients::Pool;
use fred::types::scripts::Script;
use fred::types::{FromValue, Value};
use std::sync::LazyLock;

/// Takes due members of one queue and re-scores them to the lease deadline.
pub(crate) static DEQUEUE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/dequeue.lua")));
/// Leases cards taken from a manual list unless they are in flight.
pub(crate) static CLAIM: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/claim.lua")));
/// Pops the due picks of a decisive lane.
pub(crate) static TAKE_DUE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/take_due.lua")));
/// Leases the picked cards of one shard queue that are due.
pub(crate) static CLAIM_DUE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/claim_due.lua")));
/// Drops expired semaphore holders, then adds a holder if there is room.
pub(crate) static SEMAPHORE_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/semaphore_acquire.lua")));
/// Counts the holders whose lease has not ended by Redis `TIME`.
pub(crate) static SEMAPHORE_COUNT: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/semaphore_count.lua")));
/// Deletes a key only when it still holds the caller's token.
pub(crate) static COMPARE_DELETE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/compare_delete.lua")));
/// Extends a key's TTL only when it still holds the caller's token.
pub(crate) static COMPARE_PEXPIRE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/compare_pexpire.lua")));
/// GCRA reservation against Redis `TIME`.
pub(crate) static GCRA: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/gcra.lua")));

/// How far ahead a GCRA bucket is booked, against Redis `TIME`.
pub(crate) static GCRA_BOOKED: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/gcra_booked.lua")));

/// A carrier's refusal as over its limit: the GCRA bucket's rate cut and paused.
pub(crate) static GCRA_THROTTLED: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lua/gcra_throttled.lua")));

/// Runs `script` on `key` (EVALSHA, loading the script on NOSCRIPT).
pub(crate) async fn eval<R: FromValue>(
    script: &Script,
    pool: &Pool,
    key: String,
    args: Vec<Value>,
) -> Result<R, fred::error::Error> {
    script.evalsha_with_reload(pool.next(), key, args).await
}
