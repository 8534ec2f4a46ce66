//! The carrier gateway, seen from the polling core.
//!
//! Owns the [`CarrierGateway`] trait every handler calls, its HTTP implementation
//! [`HttpGateway`] (one pooled client, a timeout on every call, retries for `stop`/`start`, the
//! cluster-wide rate limit through [`domain::RateLimiter`], one bucket per carrier) and the
//! wire types of [`protocol`]. The in-memory carrier that tests, benchmarks and the demo run
//! against is the `gateway-sim` crate, so linking the client does not link a web server.
//!
//! It speaks the wire protocol of `docs/carriers/cmp-json.md` and nothing else:
//! no Redis, no database, no crate of ours but `domain`. Callers decide what to do from
//! [`GatewayError`]'s kind, never from a message.

mod batching;
pub mod carriers;
mod client;
mod error;
pub mod protocol;

pub use batching::{BatchingGateway, LANE_CALLS_IN_FLIGHT};
pub use client::{DispatchRoom, GatewayConfig, HttpGateway, Paced, RetryPolicy};
pub use error::{AnswerFault, GatewayError};

#[cfg(any(test, feature = "mock"))]
pub use gateway_trait::MockCarrierGateway;
pub use gateway_trait::{CallKind, CarrierGateway};

mod gateway_trait {
    use crate::GatewayError;
    use domain::{CarrierId, CarrierPackage, MonthUsage, NetworkStatus, RealNameStatus};

    /// What the polling core asks the carrier. One implementation speaks HTTP
    /// ([`crate::HttpGateway`]); tests use the mock or the simulator.
    ///
    /// Every call names the card's carrier (`tb_iot_card.carrier_id`): each carrier has its own
    /// budget (`polling:ratelimit:gateway:{carrier}`), so one carrier's traffic never spends
    /// another's.
    #[cfg_attr(any(test, feature = "mock"), mockall::automock)]
    #[async_trait::async_trait]
    pub trait CarrierGateway: Send + Sync {
        /// The card's real-name (KYC) status.
        async fn realname(
            &self,
            carrier: CarrierId,
            iccid: &str,
        ) -> Result<RealNameStatus, GatewayError>;
        /// The card's data usage of the carrier's current month.
        async fn usage(&self, carrier: CarrierId, iccid: &str) -> Result<MonthUsage, GatewayError>;
        /// The packages the carrier knows for the card.
        async fn packages(
            &self,
            carrier: CarrierId,
            iccid: &str,
        ) -> Result<Vec<CarrierPackage>, GatewayError>;
        /// Suspends the card's network service; answers the status after the call.
        async fn stop(
            &self,
            carrier: CarrierId,
            iccid: &str,
        ) -> Result<NetworkStatus, GatewayError>;
        /// Resumes the card's network service; answers the status after the call.
        async fn start(
            &self,
            carrier: CarrierId,
            iccid: &str,
        ) -> Result<NetworkStatus, GatewayError>;

        /// The card's network status as the carrier sees it, without changing it. Protocols
        /// without such a query answer [`GatewayError::Unsupported`].
        async fn network_status(
            &self,
            _carrier: CarrierId,
            _iccid: &str,
        ) -> Result<NetworkStatus, GatewayError> {
            Err(GatewayError::Unsupported("network status"))
        }

        /// Most cards one batch call of `carrier` carries (1: the protocol has no batch call).
        fn batch_size(&self, _carrier: CarrierId) -> usize {
            1
        }

        /// Real-name statuses of several cards of one carrier, in as few calls as the platform
        /// allows. The inner results follow `iccids`' order; a card the answer did not mention
        /// is [`GatewayError::MissingFromBatch`], never a guess. The outer error: the whole
        /// call failed. By default one call per card.
        async fn realname_batch(
            &self,
            carrier: CarrierId,
            iccids: &[String],
        ) -> Result<Vec<Result<RealNameStatus, GatewayError>>, GatewayError> {
            let mut out = Vec::with_capacity(iccids.len());
            for iccid in iccids {
                out.push(self.realname(carrier, iccid).await);
            }
            Ok(out)
        }

        /// Month-to-date usage of several cards; as [`CarrierGateway::realname_batch`].
        async fn usage_batch(
            &self,
            carrier: CarrierId,
            iccids: &[String],
        ) -> Result<Vec<Result<MonthUsage, GatewayError>>, GatewayError> {
            let mut out = Vec::with_capacity(iccids.len());
            for iccid in iccids {
                out.push(self.usage(carrier, iccid).await);
            }
            Ok(out)
        }

        /// Network statuses of several cards; as [`CarrierGateway::realname_batch`].
        async fn network_status_batch(
            &self,
            carrier: CarrierId,
            iccids: &[String],
        ) -> Result<Vec<Result<NetworkStatus, GatewayError>>, GatewayError> {
            let mut out = Vec::with_capacity(iccids.len());
            for iccid in iccids {
                out.push(self.network_status(carrier, iccid).await);
            }
            Ok(out)
        }

        /// Page `page` (from 1) of the carrier's own listing of its cards, for the record sync
        /// (`domain::SyncPage`): Control Center's Search Devices of the devices changed since
        /// `since`, 1NCE's SIM list (every SIM; `since` is not used). Protocols without such a
        /// listing: [`GatewayError::Unsupported`].
        async fn sync_page(
            &self,
            _carrier: CarrierId,
            _since: chrono::DateTime<chrono::Utc>,
            _page: u32,
        ) -> Result<domain::SyncPage, GatewayError> {
            Err(GatewayError::Unsupported("sync"))
        }

        /// One harmless authenticated call (the admin API's "test connection"): `Ok` when the
        /// platform accepted the credentials and answered as documented.
        async fn probe(&self, _carrier: CarrierId) -> Result<(), GatewayError> {
            Ok(())
        }
    }

    /// The five calls of the protocol; the `call` label of the metrics and the sim's stats.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum CallKind {
        Realname,
        Usage,
        Packages,
        Stop,
        Start,
    }

    impl CallKind {
        pub const ALL: [CallKind; 5] = [
            CallKind::Realname,
            CallKind::Usage,
            CallKind::Packages,
            CallKind::Stop,
            CallKind::Start,
        ];

        /// The wire name: the last segment of `/v1/cards/{name}` and the metrics label.
        pub const fn as_str(self) -> &'static str {
            match self {
                CallKind::Realname => "realname",
                CallKind::Usage => "usage",
                CallKind::Packages => "packages",
                CallKind::Stop => "stop",
                CallKind::Start => "start",
            }
        }

        /// The request path of the call.
        pub const fn path(self) -> &'static str {
            match self {
                CallKind::Realname => "/v1/cards/realname",
                CallKind::Usage => "/v1/cards/usage",
                CallKind::Packages => "/v1/cards/packages",
                CallKind::Stop => "/v1/cards/stop",
                CallKind::Start => "/v1/cards/start",
            }
        }

        /// Stop and start change the card; the others only read.
        pub const fn is_command(self) -> bool {
            matches!(self, CallKind::Stop | CallKind::Start)
        }

        /// A dense index (0..5) for per-call counters.
        pub const fn index(self) -> usize {
            self as usize
        }
    }

    impl std::fmt::Display for CallKind {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.as_str())
        }
    }
}
