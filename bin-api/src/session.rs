//! Dashboard sign-in: an API key is exchanged once (`POST /ui/session`) for a session cookie,
//! so the key never sits in the page's scripts or storage. The cookie is `HttpOnly` (no
//! script reads it), `SameSite=Strict` (no other site's page sends it) and `Secure` when the
//! request came over TLS (`X-Forwarded-Proto: https` from the balancer). Writes made with the
//! cookie must also carry the session's CSRF token in `X-CSRF-Token`.
//!
//! Sessions live in Redis (`polling:ui:session:{sha256 of the cookie}`), shared by every API
//! replica: the server ends them at [`SESSION_TTL`] or at sign-out (`DELETE /ui/session`),
//! and a session is only as good as its key: a revoked key ends it within the key cache's
//! TTL. A Redis dump holds no usable cookie, only its hash.

use crate::keys::{hash_key, random_hex};
use axum::http::{HeaderMap, HeaderValue, header};
use fred::clients::Pool;
use fred::interfaces::KeysInterface;
use fred::types::Expiration;
use polling_queue::{Keys, RedisKey};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The cookie's name.
pub(crate) const COOKIE: &str = "cmp_session";
/// The header a write made with the cookie carries the session's CSRF token in.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long a sign-in lasts, whatever the activity: the server forgets it then.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// A session as stored: whose key, and the token its writes must show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Session {
    /// The SHA-256 of the API key signed in with (never the key).
    pub(crate) key_hash: String,
    pub(crate) csrf: String,
}

/// A new session: the cookie's value (given to the browser only) and the session.
pub(crate) struct Opened {
    pub(crate) token: String,
    pub(crate) session: Session,
}

/// The sessions in Redis. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Sessions {
    redis: Pool,
    keys: Keys,
}

impl Sessions {
    pub(crate) fn new(redis: Pool, keys: Keys) -> Self {
        Self { redis, keys }
    }

    fn key(&self, token: &str) -> String {
        self.keys.render(&RedisKey::UiSession {
            hash: hash_key(token),
        })
    }

    /// Opens a session for the key whose hash is `key_hash`.
    pub(crate) async fn open(&self, key_hash: String) -> Result<Opened, fred::error::Error> {
        let token = random_hex::<32>();
        let session = Session {
            key_hash,
            csrf: random_hex::<32>(),
        };
        let json = serde_json::to_string(&session)
            .map_err(|e| fred::error::Error::new(fred::error::ErrorKind::Parse, e.to_string()))?;
        let ttl = i64::try_from(SESSION_TTL.as_secs()).unwrap_or(i64::MAX);
        let _: () = self
            .redis
            .set(
                self.key(&token),
                json,
                Some(Expiration::EX(ttl)),
                None,
                false,
            )
            .await?;
        Ok(Opened { token, session })
    }

    /// The session of a cookie value; `None` when it ended, never existed or does not decode.
    pub(crate) async fn find(&self, token: &str) -> Result<Option<Session>, fred::error::Error> {
        let json: Option<String> = self.redis.get(self.key(token)).await?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    /// Ends a session (sign-out); ending one that is gone is not an error.
    pub(crate) async fn close(&self, token: &str) -> Result<(), fred::error::Error> {
        let _: i64 = self.redis.del(self.key(token)).await?;
        Ok(())
    }
}

/// The session cookie's value in a request, if it carries one.
pub(crate) fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

/// Whether the request reached the balancer over TLS.
fn over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// The `Set-Cookie` value that hands the browser a session.
pub(crate) fn set_cookie(token: &str, request: &HeaderMap) -> HeaderValue {
    let secure = if over_tls(request) { "; Secure" } else { "" };
    let value = format!(
        "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        SESSION_TTL.as_secs()
    );
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The `Set-Cookie` value that makes the browser drop the session cookie.
pub(crate) fn clear_cookie(request: &HeaderMap) -> HeaderValue {
    let secure = if over_tls(request) { "; Secure" } else { "" };
    let value = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}");
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Whether a write made with `session` shows its CSRF token.
pub(crate) fn csrf_ok(session: &Session, headers: &HeaderMap) -> bool {
    headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| constant_time_eq(v.trim().as_bytes(), session.csrf.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; cmp_session=abc ; b=2")]);
        assert_eq!(cookie(&h), Some("abc"));
        assert_eq!(cookie(&headers(&[("cookie", "cmp_sessionx=1")])), None);
        assert_eq!(cookie(&headers(&[("cookie", "cmp_session=")])), None);
        assert_eq!(cookie(&HeaderMap::new()), None);
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_behind_tls() {
        let plain = set_cookie("t", &HeaderMap::new());
        let plain = plain.to_str().unwrap();
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Strict"));
        assert!(!plain.contains("Secure"));
        let tls = set_cookie("t", &headers(&[("x-forwarded-proto", "https")]));
        assert!(tls.to_str().unwrap().ends_with("; Secure"));
        assert!(
            clear_cookie(&HeaderMap::new())
                .to_str()
                .unwrap()
                .contains("Max-Age=0")
        );
    }

    #[test]
    fn a_write_must_show_the_sessions_token() {
        let s = Session {
            key_hash: "h".into(),
            csrf: "tok".into(),
        };
        assert!(csrf_ok(&s, &headers(&[("x-csrf-token", "tok")])));
        assert!(!csrf_ok(&s, &headers(&[("x-csrf-token", "to")])));
        assert!(!csrf_ok(&s, &HeaderMap::new()));
    }
}
