//! The token: `get/token?appid&password&transid` answers `result[0].token` living
//! `result[0].ttl` seconds, cached until shortly before it lapses.

use super::OneLink;
use super::wire::{Reply, code};
use crate::carriers::units::amount_of;
use crate::{AnswerFault, GatewayError};
use rust_decimal::prelude::ToPrimitive;
use serde_json::Value;
use std::time::Duration;

/// A token's lifetime when the answer does not say (`ttl` absent).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

impl OneLink {
    /// A new token and its lifetime (`get/token`).
    pub(super) async fn fetch_token(&self) -> Result<(String, Duration), GatewayError> {
        let transid = self.transid();
        let url = self.url(
            "/get/token",
            &[
                ("appid", self.appid.expose()),
                ("password", self.password.expose()),
                ("transid", transid.as_str()),
            ],
        )?;
        let req = self.http.client().get(url);
        let answer = self.http.query("token", req).await?;
        let items = match self.read("token", &answer)? {
            Reply::Ok(items) => items,
            Reply::Refused(status, message) => {
                return Err(match status.as_str() {
                    code::AUTH | code::TOKEN => GatewayError::Auth(format!(
                        "token: the platform refused the appid/password (OneLink status {status})"
                    )),
                    _ => self.refusal("token", &status, &message),
                });
            }
        };
        let first = items.first();
        let token = first
            .and_then(|i| i.get("token"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| self.missing("token", "result[0].token"))?
            .to_owned();
        self.http.add_secret(&token);
        let lifetime = match first.and_then(|i| i.get("ttl")) {
            None | Some(Value::Null) => DEFAULT_TOKEN_LIFETIME,
            Some(v) => {
                let secs = amount_of(v)
                    .filter(|d| d.fract().is_zero())
                    .and_then(|d| d.to_u64())
                    .ok_or_else(|| {
                        self.http
                            .fault(AnswerFault::BadValue, format!("token: `ttl` is {v}"))
                    })?;
                Duration::from_secs(secs)
            }
        };
        Ok((token, lifetime))
    }
}
