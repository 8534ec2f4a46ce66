//! What the group-commit writers (usage, real-name, package) share: one retry of a batch that
//! lost a lock conflict, and one error per poll when the batch wrote nothing.

use domain::store::StoreResult;
use domain::{Cause, StoreError};

/// Runs `write` (one transaction for the whole batch) and once more if it lost a deadlock or a
/// serialization conflict; a failure left after that is logged once for the batch.
pub(crate) async fn retried<A, F, Fut>(what: &str, polls: usize, mut write: F) -> StoreResult<A>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<A>>,
{
    let mut result = write().await;
    if let Err(error) = &result
        && retryable(error)
    {
        tracing::debug!(polls, %error, "{what} batch lost a lock conflict; retried once");
        result = write().await;
    }
    if let Err(error) = &result {
        tracing::warn!(polls, %error, "{what} batch failed; nothing written");
    }
    result
}

/// The answers of a batch that wrote nothing: a database error per poll, each with the
/// batch's error as its cause.
pub(crate) fn each_failed<X>(polls: usize, error: StoreError) -> Vec<StoreResult<X>> {
    let cause = Cause::new(error);
    (0..polls)
        .map(|_| Err(StoreError::Database(cause.clone())))
        .collect()
}

/// Deadlock (40P01) or serialization failure (40001).
fn retryable(error: &StoreError) -> bool {
    matches!(crate::error::sqlstate(error), Some("40P01" | "40001"))
}
