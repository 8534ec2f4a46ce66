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
}

impl GatewayError {
    /// Whether trying the same call again may succeed: timeouts, throttling, 5xx and transport
    /// failures. A 404, a 4xx or an undecodable answer will not change by retrying.
    pub fn is_retryable(&self) -> bool {
        match self {
            GatewayError::Timeout
            | GatewayError::Throttled { .. }
            | GatewayError::RateLimited
            | GatewayError::Transport(_) => true,
            GatewayError::Carrier { status, .. } => *status >= 500,
            GatewayError::NotFound | GatewayError::Decode(_) => false,
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
