//! Carrier credentials are write-only: [`Secret`] prints as `***` in `Debug` and `Display` and
//! has no `Serialize`, so a credential cannot reach an API answer, a log line or an audit row
//! by accident; the one way out is [`Secret::expose`], called where a request is signed.

use crate::CarrierProtocol;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// A credential value. Never printed, never serialised: `expose` is the only way to read it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for signing a request. Never log or return what this gives.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A carrier's credentials by field name (see [`CarrierProtocol::credential_fields`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Credentials(BTreeMap<String, Secret>);

impl Credentials {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a field; builder style.
    pub fn with(mut self, field: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.insert(field.into(), Secret::new(value));
        self
    }

    /// The field's value, for signing a request.
    pub fn get(&self, field: &str) -> Option<&Secret> {
        self.0.get(field)
    }

    /// The field names set, never their values: what an API answer may show.
    pub fn fields(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }

    /// Every value, for a caller that must scrub them out of a text (error bodies echo requests).
    pub fn values(&self) -> impl Iterator<Item = &Secret> {
        self.0.values()
    }

    /// `text` with every credential value replaced by `***`, longest first (a value inside
    /// another is not left half-replaced): for texts that may echo a request.
    pub fn scrub(&self, text: &str) -> String {
        let mut values: Vec<&str> = self
            .0
            .values()
            .map(Secret::expose)
            .filter(|v| !v.is_empty())
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values
            .into_iter()
            .fold(text.to_owned(), |out, v| out.replace(v, "***"))
    }

    /// The stored form (`tb_carrier.credentials`). Only the store calls it.
    pub fn to_stored_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.0
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.0.clone())))
                .collect(),
        )
    }

    /// Checks the fields against what `protocol` needs: each required field present and
    /// non-empty, the push stream's fields (`stream_credential_fields`) both set non-empty or
    /// both absent, no field the protocol does not know.
    pub fn validate(&self, protocol: CarrierProtocol) -> Result<(), String> {
        let wanted = protocol.credential_fields();
        let stream = protocol.stream_credential_fields();
        for f in wanted {
            match self.0.get(*f) {
                Some(v) if !v.is_empty() => {}
                _ => return Err(format!("{protocol} needs credentials field `{f}`")),
            }
        }
        let known = |k: &str| wanted.contains(&k) || stream.contains(&k);
        if let Some(extra) = self.0.keys().find(|k| !known(k)) {
            let all: Vec<&str> = wanted.iter().chain(stream).copied().collect();
            return Err(format!(
                "{protocol} takes no credentials field `{extra}` (it takes: {})",
                if all.is_empty() {
                    "none".to_owned()
                } else {
                    all.join(", ")
                }
            ));
        }
        let set = stream
            .iter()
            .filter(|f| self.0.get(**f).is_some_and(|v| !v.is_empty()))
            .count();
        if set != 0 && set != stream.len() {
            return Err(format!(
                "the push stream needs credentials fields {} together, each non-empty",
                stream.join(" and ")
            ));
        }
        if set == 0 && stream.iter().any(|f| self.0.contains_key(*f)) {
            return Err(format!(
                "credentials fields {} must not be empty",
                stream.join(" and ")
            ));
        }
        Ok(())
    }

    /// The push stream's Basic auth user and password, when both are set.
    pub fn stream_basic_auth(&self) -> Option<(&Secret, &Secret)> {
        let user = self.get(crate::STREAM_USERNAME).filter(|v| !v.is_empty())?;
        let password = self.get(crate::STREAM_PASSWORD).filter(|v| !v.is_empty())?;
        Some((user, password))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let c = Credentials::new().with("password", "hunter2");
        assert!(!format!("{c:?}").contains("hunter2"));
        assert_eq!(c.get("password").map(Secret::expose), Some("hunter2"));
        assert_eq!(c.fields(), vec!["password".to_owned()]);
    }

    #[test]
    fn scrub_replaces_every_value() {
        let c = Credentials::new()
            .with("appid", "app")
            .with("password", "app-secret");
        assert_eq!(
            c.scrub("sent app-secret for app"),
            "sent *** for ***",
            "longest first"
        );
    }

    #[test]
    fn credentials_are_checked_against_the_protocol() {
        let ok = Credentials::new().with("appid", "a").with("password", "p");
        assert!(ok.validate(CarrierProtocol::OneLink).is_ok());
        let missing = Credentials::new().with("appid", "a");
        assert!(
            missing
                .validate(CarrierProtocol::OneLink)
                .unwrap_err()
                .contains("password")
        );
        let extra = ok.clone().with("token", "t");
        assert!(
            extra
                .validate(CarrierProtocol::OneLink)
                .unwrap_err()
                .contains("token")
        );
        assert!(
            Credentials::new()
                .validate(CarrierProtocol::CmpJson)
                .is_ok()
        );
    }

    #[test]
    fn stream_credentials_are_optional_and_go_together() {
        let api = Credentials::new()
            .with("client_id", "c")
            .with("client_secret", "s");
        assert!(api.validate(CarrierProtocol::OneNce).is_ok());
        assert!(api.stream_basic_auth().is_none());
        let both = api
            .clone()
            .with("stream_username", "u")
            .with("stream_password", "p");
        assert!(both.validate(CarrierProtocol::OneNce).is_ok());
        let (u, p) = both.stream_basic_auth().unwrap_or_else(|| unreachable!());
        assert_eq!((u.expose(), p.expose()), ("u", "p"));
        let half = api.clone().with("stream_username", "u");
        assert!(
            half.validate(CarrierProtocol::OneNce)
                .unwrap_err()
                .contains("together")
        );
        let empty = api.with("stream_username", "").with("stream_password", "");
        assert!(empty.validate(CarrierProtocol::OneNce).is_err());
        let onelink = Credentials::new()
            .with("appid", "a")
            .with("password", "p")
            .with("stream_username", "u")
            .with("stream_password", "p");
        assert!(
            onelink
                .validate(CarrierProtocol::OneLink)
                .unwrap_err()
                .contains("takes no credentials field `stream_")
        );
    }
}
