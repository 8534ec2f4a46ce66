use std::time::Duration;

/// Why a gateway call failed. Callers decide from the variant (retry later, give up, alert),
/// never from the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// No answer within the configured timeout.
    #[error("gateway timeout")]
    Timeout,
    /// The carrier answered 429.
    #[error("gateway throttled (retry after {retry_after:?})")]
    Throttled {
        /// The carrier's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// The shared budget (`CMP_GATEWAY_RATE_LIMIT`) had no slot within the wait bound: no
    /// request was made. The card lost nothing but its turn; its caller puts it back due now.
    #[error("gateway budget exhausted; no request made")]
    RateLimited,
    /// The carrier does not know the card (404).
    #[error("card unknown to the carrier")]
    NotFound,
    /// Any other non-success answer.
    #[error("carrier answered {status}: {body}")]
    Carrier {
        status: u16,
        /// The start of the answer's body, for the log.
        body: String,
    },
    /// A success answer that does not follow the protocol.
    #[error("cannot decode the carrier's answer: {0}")]
    Decode(String),
    /// Connection refused, reset, DNS, TLS: the request may or may not have arrived.
    #[error("gateway transport error: {0}")]
    Transport(String),
    /// The platform refused our credentials (bad key, bad password, token refused after a
    /// renewal). Nothing works until an operator fixes the carrier's settings.
    #[error("carrier refused the credentials: {0}")]
    Auth(String),
    /// An answer the adapter does not understand: an unknown status, a missing field, an HTML
    /// page, an answer for another ICCID. Never guessed at: the card is left as it is.
    #[error("carrier answer not understood ({kind}): {detail}")]
    Unintelligible {
        kind: AnswerFault,
        /// What was wrong, without credentials.
        detail: String,
    },
    /// The platform refuses to change the card now (e.g. OneLink refuses a second status change
    /// of one card within minutes). Retryable later; never read as the change having happened.
    #[error("carrier refused the change for now: {detail}")]
    ChangeLocked {
        retry_after: Option<Duration>,
        detail: String,
    },
    /// The card was asked in a batch and the answer did not mention it: nothing is known of it.
    #[error("card missing from the carrier's batch answer")]
    MissingFromBatch,
    /// The carrier is disabled in its configuration: no request was made.
    #[error("carrier {0} is disabled")]
    Disabled(i64),
    /// The carrier's protocol has no such call.
    #[error("the carrier's protocol has no {0} call")]
    Unsupported(&'static str),
}

/// What was wrong with an answer the adapter did not understand (`kind` label of
/// `cmp_carrier_answer_errors_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnswerFault {
    /// Not JSON (an HTML error page from a proxy, an empty body).
    NotJson,
    /// A field the protocol promises is absent or null.
    MissingField,
    /// A status value outside the documented table.
    UnknownStatus,
    /// An error code outside the documented table.
    UnknownCode,
    /// A value of the wrong shape (a usage figure that is no number, a bad date).
    BadValue,
    /// The answer names another card than the one asked.
    WrongIccid,
}

impl AnswerFault {
    pub const fn as_str(self) -> &'static str {
        match self {
            AnswerFault::NotJson => "not_json",
            AnswerFault::MissingField => "missing_field",
            AnswerFault::UnknownStatus => "unknown_status",
            AnswerFault::UnknownCode => "unknown_code",
            AnswerFault::BadValue => "bad_value",
            AnswerFault::WrongIccid => "wrong_iccid",
        }
    }
}

impl std::fmt::Display for AnswerFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl GatewayError {
    /// Whether trying the same call again may succeed: timeouts, throttling, 5xx and transport
    /// failures. A 404, a 4xx or an undecodable answer will not change by retrying.
    pub fn is_retryable(&self) -> bool {
        match self {
            GatewayError::Timeout
            | GatewayError::Throttled { .. }
            | GatewayError::RateLimited
            | GatewayError::Transport(_)
            | GatewayError::ChangeLocked { .. }
            | GatewayError::MissingFromBatch => true,
            GatewayError::Carrier { status, .. } => *status >= 500,
            GatewayError::NotFound
            | GatewayError::Decode(_)
            | GatewayError::Auth(_)
            | GatewayError::Unintelligible { .. }
            | GatewayError::Disabled(_)
            | GatewayError::Unsupported(_) => false,
        }
    }

    /// The `outcome` label of `cmp_gateway_requests_total`.
    pub fn outcome(&self) -> &'static str {
        match self {
            GatewayError::Timeout => "timeout",
            GatewayError::Throttled { .. } => "throttled",
            GatewayError::RateLimited => "rate_limited",
            GatewayError::NotFound => "not_found",
            GatewayError::Carrier { status, .. } if *status >= 500 => "carrier_5xx",
            GatewayError::Carrier { .. } => "carrier_4xx",
            GatewayError::Decode(_) => "decode_error",
            GatewayError::Transport(_) => "transport_error",
            GatewayError::Auth(_) => "auth_error",
            GatewayError::Unintelligible { .. } => "unintelligible",
            GatewayError::ChangeLocked { .. } => "change_locked",
            GatewayError::MissingFromBatch => "missing_from_batch",
            GatewayError::Disabled(_) => "disabled",
            GatewayError::Unsupported(_) => "unsupported",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_kinds() {
        assert!(GatewayError::Timeout.is_retryable());
        assert!(GatewayError::Throttled { retry_after: None }.is_retryable());
        assert!(GatewayError::RateLimited.is_retryable());
        assert!(GatewayError::Transport("reset".into()).is_retryable());
        assert!(
            GatewayError::Carrier {
                status: 503,
                body: String::new()
            }
            .is_retryable()
        );
        assert!(
            !GatewayError::Carrier {
                status: 400,
                body: String::new()
            }
            .is_retryable()
        );
        assert!(!GatewayError::NotFound.is_retryable());
        assert!(!GatewayError::Decode("x".into()).is_retryable());
    }
}
