//! `Authorization: Bearer <key>` on every `/api/admin` route, and what each role may do.
//!
//! Keys are stored as SHA-256 hashes (`keys.rs`). A lookup result (found or not) is kept in
//! process for [`KEY_CACHE_TTL`], so a request costs no database round trip while a key is
//! hot, and a revocation takes effect within that time on every replica (docs/decisions.md).

use crate::keys::hash_key;
use crate::session::{Session, Sessions};
use axum::http::{HeaderMap, Method, header};
use domain::store::ApiKeyStore;
use domain::{ApiKey, ApiKeyId, ApiKeyRole};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a key lookup is trusted: the longest a revoked key keeps working.
pub(crate) const KEY_CACHE_TTL: Duration = Duration::from_secs(5);
/// Entries kept at most; past it the cache is emptied (a flood of bad keys cannot grow it).
const KEY_CACHE_MAX: usize = 10_000;

/// Who is calling: put in the request's extensions by the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    pub(crate) id: ApiKeyId,
    pub(crate) name: String,
    pub(crate) role: ApiKeyRole,
}

impl From<&ApiKey> for Caller {
    fn from(k: &ApiKey) -> Self {
        Caller {
            id: k.id,
            name: k.name.clone(),
            role: k.role,
        }
    }
}

/// Why a request is not let in.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// 401: no key, a malformed header, or an unknown or revoked key.
    Unauthenticated(&'static str),
    /// The key store or the session store failed: a 5xx, not the caller's fault.
    Unavailable(String),
}

/// Key hash -> (the caller, or `None` for an unknown key; when it was looked up).
type KeyCache = HashMap<String, (Option<Caller>, Instant)>;

/// Key lookups with a short-lived cache. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Authenticator {
    store: Arc<dyn ApiKeyStore>,
    cache: Arc<Mutex<KeyCache>>,
    ttl: Duration,
}

impl Authenticator {
    pub(crate) fn new(store: Arc<dyn ApiKeyStore>) -> Self {
        Self::with_ttl(store, KEY_CACHE_TTL)
    }

    pub(crate) fn with_ttl(store: Arc<dyn ApiKeyStore>, ttl: Duration) -> Self {
        Authenticator {
            store,
            cache: Arc::new(Mutex::new(HashMap::new())),
            ttl,
        }
    }

    /// The caller named by the `Authorization` header.
    pub(crate) async fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or(Refusal::Unauthenticated("missing Authorization header"))?;
        let key = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or(Refusal::Unauthenticated(
                "the Authorization header must be `Bearer <api key>`",
            ))?;
        self.by_hash(hash_key(key)).await
    }

    /// The caller whose key hashes to `hash` (a session holds the hash, never the key).
    pub(crate) async fn by_hash(&self, hash: String) -> Result<Caller, Refusal> {
        if let Some(hit) = self.cached(&hash) {
            return hit.ok_or(Refusal::Unauthenticated("unknown or revoked API key"));
        }
        let found = self
            .store
            .authenticate(&hash)
            .await
            .map_err(|e| Refusal::Unavailable(e.to_string()))?;
        let caller = found.as_ref().map(Caller::from);
        self.remember(hash, caller.clone());
        caller.ok_or(Refusal::Unauthenticated("unknown or revoked API key"))
    }

    fn cached(&self, hash: &str) -> Option<Option<Caller>> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .get(hash)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(caller, _)| caller.clone())
    }

    fn remember(&self, hash: String, caller: Option<Caller>) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= KEY_CACHE_MAX {
            cache.clear();
        }
        cache.insert(hash, (caller, Instant::now()));
    }
}

/// The caller of a request, and its dashboard session when it came with the session cookie
/// instead of an `Authorization` header (the header wins when both are sent).
pub(crate) async fn identify(
    auth: &Authenticator,
    sessions: &Sessions,
    headers: &HeaderMap,
) -> Result<(Caller, Option<Session>), Refusal> {
    if headers.contains_key(header::AUTHORIZATION) {
        return Ok((auth.authenticate(headers).await?, None));
    }
    let Some(token) = crate::session::cookie(headers) else {
        return Err(Refusal::Unauthenticated(
            "missing Authorization header (or dashboard session cookie)",
        ));
    };
    let session = sessions
        .find(token)
        .await
        .map_err(|e| Refusal::Unavailable(e.to_string()))?
        .ok_or(Refusal::Unauthenticated(
            "the dashboard session ended: sign in again",
        ))?;
    let caller = auth.by_hash(session.key_hash.clone()).await?;
    Ok((caller, Some(session)))
}

/// Writes an `operator` key may make besides reads (method, route under `/api/admin`).
const OPERATOR_WRITES: &[(Method, &str)] = &[
    (Method::POST, "/polling-manual-trigger/single"),
    (Method::POST, "/polling-manual-trigger/batch"),
    (Method::POST, "/polling-manual-trigger/by-filter"),
    (Method::POST, "/polling-manual-trigger/cancel"),
    (Method::POST, "/cards/{id}/stop"),
    (Method::POST, "/cards/{id}/start"),
    (Method::POST, "/devices/{id}/stop"),
    (Method::POST, "/devices/{id}/start"),
    (Method::PATCH, "/assets/{asset_type}/{id}/polling-status"),
    (Method::POST, "/devices/{id}/cards"),
    (Method::DELETE, "/devices/{id}/cards/{card_id}"),
    (Method::POST, "/cards/import"),
];

/// Reads only an `admin` key may make.
const ADMIN_READS: &[&str] = &["/admin-audit-log"];

/// Whether `role` may call `method` on `route` (the route template under `/api/admin`).
pub(crate) fn allowed(role: ApiKeyRole, method: &Method, route: &str) -> bool {
    match role {
        ApiKeyRole::Admin => true,
        _ if ADMIN_READS.contains(&route) => false,
        _ if method == Method::GET || method == Method::HEAD => true,
        ApiKeyRole::Operator => OPERATOR_WRITES
            .iter()
            .any(|(m, r)| m == method && *r == route),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles() {
        use ApiKeyRole::*;
        assert!(allowed(Viewer, &Method::GET, "/cards"));
        assert!(!allowed(Viewer, &Method::POST, "/cards/{id}/stop"));
        assert!(allowed(Operator, &Method::POST, "/cards/{id}/stop"));
        assert!(!allowed(Operator, &Method::POST, "/polling-configs"));
        assert!(!allowed(Operator, &Method::GET, "/admin-audit-log"));
        assert!(allowed(Admin, &Method::DELETE, "/polling-configs/{id}"));
        assert!(allowed(Admin, &Method::GET, "/admin-audit-log"));
    }
}
