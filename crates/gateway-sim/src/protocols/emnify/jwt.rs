//! The JWTs the simulated platform issues: `base64url(header).base64url(payload).signature`,
//! the payload carrying `exp` and the simulator's token as `jti`, signed with a keyed hash of
//! the simulator's seed (HS256 in spirit; no client ever checks it, the platform does).

use crate::mix64;

pub(super) fn issue(jti: &str, iat: u64, exp: u64, seed: u64) -> String {
    let header = b64url(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = b64url(
        format!(
            r#"{{"sub":"sim-emnify","esc.app":1,"esc.appName":"gateway-sim","iat":{iat},"exp":{exp},"jti":"{jti}"}}"#
        )
        .as_bytes(),
    );
    let signing_input = format!("{header}.{payload}");
    let sig = sign(&signing_input, seed);
    format!("{signing_input}.{sig}")
}

/// The `jti` of a well-formed, correctly signed JWT.
pub(super) fn verify(token: &str, seed: u64) -> Option<String> {
    let mut parts = token.split('.');
    let (h, p, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    if sign(&format!("{h}.{p}"), seed) != s {
        return None;
    }
    let payload = b64url_decode(p)?;
    let v: serde_json::Value = serde_json::from_slice(&payload).ok()?;
    v.get("jti")?.as_str().map(str::to_owned)
}

fn sign(input: &str, seed: u64) -> String {
    let mut out = Vec::with_capacity(32);
    let mut h = seed ^ 0x656d_6e69_6679;
    for lane in 0..4u64 {
        let mut x = h ^ lane.wrapping_mul(0x9e37_79b9);
        for b in input.bytes() {
            x = mix64(x ^ u64::from(b));
        }
        h = mix64(x);
        out.extend_from_slice(&h.to_be_bytes());
    }
    b64url(&out)
}

/// Base64url without padding (RFC 7515 §2).
pub(super) fn b64url(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

pub(super) fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .ok()
}
