//! [`TokenCache`]: one access token per adapter, fetched once for all concurrent callers,
//! renewed before it expires, dropped when the platform says it is no longer valid.
//!
//! A token request the platform refuses for our credentials is remembered for
//! [`REFUSAL_HOLD`]: every poll of every card of the carrier would otherwise ask for a token
//! again, hammering the platform's login with a wrong password (which platforms answer by
//! locking the account). An operator's fix of the credentials builds a new adapter, and so a
//! new cache, at once.

use super::transport::{Answer, CarrierHttp};
use crate::GatewayError;
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// A token renewed this long before its announced expiry (or at 80% of a short lifetime), so
/// that no call goes out with a token about to lapse in flight.
const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// What one attempt of an authenticated request came to (see [`TokenCache::authed`]).
pub(crate) enum Attempt<R> {
    Done(R),
    /// The platform called the token invalid; `R` is its answer.
    TokenRefused(R),
}

/// How an adapter gets a new token from its platform: any `Fn() -> impl Future` answering the
/// token and how long it lives (usually `|| self.fetch_token()`).
pub(crate) trait FetchToken {
    type Fetching: Future<Output = Result<(String, Duration), GatewayError>>;

    fn fetch(&self) -> Self::Fetching;
}

impl<G, Fut> FetchToken for G
where
    G: Fn() -> Fut,
    Fut: Future<Output = Result<(String, Duration), GatewayError>>,
{
    type Fetching = Fut;

    fn fetch(&self) -> Fut {
        self()
    }
}

/// How long a refusal of our credentials is answered from memory.
pub(crate) const REFUSAL_HOLD: Duration = Duration::from_secs(30);

#[derive(Default)]
pub(crate) struct TokenCache {
    current: Mutex<Option<Cached>>,
    /// The last refusal of our credentials, and when it stops being answered from memory.
    refused: Mutex<Option<(GatewayError, Instant)>>,
}

/// Never shows the token.
impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCache(***)")
    }
}

struct Cached {
    value: String,
    renew_at: Instant,
}

impl TokenCache {
    /// The cached token, or a fresh one from `fetch` (answering the token and its lifetime).
    /// Concurrent callers wait for one fetch.
    pub(crate) async fn get(&self, fetch: impl FetchToken) -> Result<String, GatewayError> {
        let mut current = self.current.lock().await;
        if let Some(c) = current.as_ref()
            && Instant::now() < c.renew_at
        {
            return Ok(c.value.clone());
        }
        if let Some((e, until)) = self.refused.lock().await.as_ref()
            && Instant::now() < *until
        {
            return Err(e.clone());
        }
        let (value, lifetime) = match fetch.fetch().await {
            Ok(v) => v,
            Err(e) => {
                if matches!(e, GatewayError::Auth(_)) {
                    *self.refused.lock().await = Some((e.clone(), Instant::now() + REFUSAL_HOLD));
                }
                return Err(e);
            }
        };
        *self.refused.lock().await = None;
        // A token issued with no time left (a `ttl` of 0) serves the request that fetched it
        // and is never kept: the next request fetches again.
        *current = (!lifetime.is_zero()).then(|| {
            let early = RENEW_BEFORE.min(lifetime / 5);
            Cached {
                value: value.clone(),
                renew_at: Instant::now() + lifetime.saturating_sub(early),
            }
        });
        Ok(value)
    }

    /// One request authenticated with the cached token, `attempt(token)`: when the platform
    /// calls the token invalid ([`Attempt::TokenRefused`]: expired mid-run, revoked), the token
    /// is dropped and the request goes once more with a new one. `Ok(Err(r))`: the platform
    /// refused a freshly issued token too, for the caller to word as `Auth`.
    pub(crate) async fn authed<R, F, Fut>(
        &self,
        fetch: impl FetchToken,
        attempt: F,
    ) -> Result<Result<R, R>, GatewayError>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<Attempt<R>, GatewayError>>,
    {
        let mut renewed = false;
        loop {
            let token = self.get(|| fetch.fetch()).await?;
            match attempt(token.clone()).await? {
                Attempt::Done(r) => return Ok(Ok(r)),
                Attempt::TokenRefused(r) => {
                    self.invalidate(&token).await;
                    if renewed {
                        return Ok(Err(r));
                    }
                    renewed = true;
                }
            }
        }
    }

    /// [`TokenCache::authed`] for the platforms that answer an invalid Bearer token with HTTP 401:
    /// `build(token)` is the request, sent through `http` as a command or a query.
    /// `Ok(Err(answer))`: the second 401.
    pub(crate) async fn bearer(
        &self,
        http: &CarrierHttp,
        call: &'static str,
        command: bool,
        fetch: impl FetchToken,
        build: impl Fn(&str) -> reqwest::RequestBuilder,
    ) -> Result<Result<Answer, Answer>, GatewayError> {
        self.authed(fetch, |token| {
            let req = build(&token);
            async move {
                let answer = http.exchange(call, command, req).await?;
                Ok(if answer.status == 401 {
                    Attempt::TokenRefused(answer)
                } else {
                    Attempt::Done(answer)
                })
            }
        })
        .await
    }

    /// Forgets `token` if it is still the cached one (the platform called it invalid); a token
    /// another caller already renewed stays.
    pub(crate) async fn invalidate(&self, token: &str) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|c| c.value == token) {
            *current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A token source that counts its fetches; the `n`-th fetch (from 0) answers `answer(n)`.
    struct Fetches<A> {
        count: AtomicU32,
        answer: A,
    }

    impl<A: Fn(u32) -> Result<(String, Duration), GatewayError>> Fetches<A> {
        fn new(answer: A) -> Self {
            Self {
                count: AtomicU32::new(0),
                answer,
            }
        }

        async fn fetch(&self) -> Result<(String, Duration), GatewayError> {
            (self.answer)(self.count.fetch_add(1, Ordering::SeqCst))
        }

        fn count(&self) -> u32 {
            self.count.load(Ordering::SeqCst)
        }
    }

    #[tokio::test]
    async fn one_fetch_serves_until_renewal_and_invalidation() {
        let cache = TokenCache::default();
        let tokens = Fetches::new(|n| Ok((format!("t{}", n + 1), Duration::from_secs(3600))));
        let fetch = || tokens.fetch();
        assert_eq!(cache.get(fetch).await.unwrap(), "t1");
        assert_eq!(cache.get(fetch).await.unwrap(), "t1");
        cache.invalidate("t0").await;
        assert_eq!(cache.get(fetch).await.unwrap(), "t1");
        cache.invalidate("t1").await;
        assert_eq!(cache.get(fetch).await.unwrap(), "t2");
        assert_eq!(tokens.count(), 2);
    }

    #[tokio::test]
    async fn a_refusal_of_the_credentials_is_answered_from_memory() {
        let cache = TokenCache::default();
        let refusals = Fetches::new(|_| Err(GatewayError::Auth("refused".into())));
        for _ in 0..5 {
            let got = cache.get(|| refusals.fetch()).await;
            assert!(matches!(got, Err(GatewayError::Auth(_))));
        }
        assert_eq!(refusals.count(), 1, "one login attempt per hold");
        // Other failures (the platform away) are not remembered.
        let other = TokenCache::default();
        let timeouts = Fetches::new(|_| Err(GatewayError::Timeout));
        let _ = other.get(|| timeouts.fetch()).await;
        let _ = other.get(|| timeouts.fetch()).await;
        assert_eq!(timeouts.count(), 2);
    }

    #[tokio::test]
    async fn a_token_with_no_time_left_serves_once_and_is_never_kept() {
        let cache = TokenCache::default();
        let tokens = Fetches::new(|n| Ok((format!("t{n}"), Duration::ZERO)));
        assert_eq!(cache.get(|| tokens.fetch()).await.unwrap(), "t0");
        assert_eq!(cache.get(|| tokens.fetch()).await.unwrap(), "t1");
        assert_eq!(tokens.count(), 2);
    }

    #[tokio::test]
    async fn a_short_lived_token_is_renewed_early() {
        let cache = TokenCache::default();
        let tokens = Fetches::new(|n| Ok((format!("t{n}"), Duration::from_millis(50))));
        assert_eq!(cache.get(|| tokens.fetch()).await.unwrap(), "t0");
        tokio::time::sleep(Duration::from_millis(45)).await;
        // 45 ms of a 50 ms token: past 80%, renewed.
        assert_eq!(cache.get(|| tokens.fetch()).await.unwrap(), "t1");
    }
}
