//! Token-owned keys: SET NX PX to take, compare-and-delete / compare-and-expire by Lua to give
//! back or extend. Shared by singleton leases and card locks.

use crate::{QueueError, scripts};
use fred::prelude::*;
use fred::types::{Expiration, SetOptions, Value};
use std::time::Duration;

fn px(ttl: Duration) -> i64 {
    ttl.as_millis().clamp(1, i64::MAX as u128) as i64
}

/// Sets `key` to a fresh token if absent; the token, or `None` when someone else holds it.
pub(crate) async fn try_take(
    pool: &Pool,
    key: String,
    ttl: Duration,
) -> Result<Option<String>, QueueError> {
    let token = uuid::Uuid::new_v4().simple().to_string();
    let set: Option<String> = pool
        .set(
            key,
            token.as_str(),
            Some(Expiration::PX(px(ttl))),
            Some(SetOptions::NX),
            false,
        )
        .await?;
    Ok(set.map(|_| token))
}

/// Deletes `key` if it still holds `token`; whether it did.
pub(crate) async fn give_back(pool: &Pool, key: String, token: &str) -> Result<bool, QueueError> {
    let n: i64 = scripts::eval(
        &scripts::COMPARE_DELETE,
        pool,
        key,
        vec![Value::from(token)],
    )
    .await?;
    Ok(n == 1)
}

/// Restarts the TTL of `key` if it still holds `token`; whether it did.
pub(crate) async fn extend(
    pool: &Pool,
    key: String,
    token: &str,
    ttl: Duration,
) -> Result<bool, QueueError> {
    let args = vec![Value::from(token), Value::from(px(ttl))];
    let n: i64 = scripts::eval(&scripts::COMPARE_PEXPIRE, pool, key, args).await?;
    Ok(n == 1)
}
