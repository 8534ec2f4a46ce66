//! The real platforms' protocols over the one in-memory fleet: each module answers its
//! platform's endpoints, auth, error codes, units, limits and pagination as its public
//! documentation describes them (`docs/carriers/<protocol>.md`), written from the documents, not
//! from the adapters, so that it is their conformance peer.
//!
//! `gateway-sim serve` mounts every platform on its path prefix ([`prefix`]) beside the
//! project's own protocol at the root; `gateway-sim serve --protocol NAME` mounts one platform at
//! the root.

mod control_center;
mod ctcc;
mod emnify;
mod onelink;
mod onence;

use super::SimState;
use super::accounts::InFlight;
use super::routes::Injected;
use super::stats::Outcome;
use axum::Router;
use domain::CarrierProtocol;
use gateway::CallKind;

pub(crate) use super::accounts::TokenCheck;
pub(crate) use super::faults::Malformed;
pub(crate) use super::fleet::{SimCardView, month_string};

/// The path prefix of a platform when all are served together (`""` for the project's own).
pub const fn prefix(protocol: CarrierProtocol) -> &'static str {
    match protocol {
        CarrierProtocol::CmpJson => "",
        CarrierProtocol::OneLink => "/onelink",
        CarrierProtocol::Ctcc5gcmp => "/ctcc",
        CarrierProtocol::ControlCenter => "/control-center",
        CarrierProtocol::OneNce => "/1nce",
        CarrierProtocol::Emnify => "/emnify",
    }
}

/// The routes of one real platform, rooted at its API root.
pub(crate) fn routes(protocol: CarrierProtocol) -> Option<Router<SimState>> {
    Some(match protocol {
        CarrierProtocol::CmpJson => return None,
        CarrierProtocol::OneLink => onelink::routes(),
        CarrierProtocol::Ctcc5gcmp => ctcc::routes(),
        CarrierProtocol::ControlCenter => control_center::routes(),
        CarrierProtocol::OneNce => onence::routes(),
        CarrierProtocol::Emnify => emnify::routes(),
    })
}

/// Every real platform, each on its prefix.
pub(crate) fn mount_all(mut r: Router<SimState>) -> Router<SimState> {
    for p in CarrierProtocol::ALL {
        if let Some(routes) = routes(p) {
            r = r.nest(prefix(p), routes);
        }
    }
    r
}

/// Why the platform turned a request away before looking at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Over the account's `rate_limit_per_sec`.
    OverRate,
    /// Over the account's `max_concurrent`.
    OverConcurrency,
    /// An injected fault (`PUT /sim/faults`, `PUT /sim/script`), already waited for.
    Fault(Injected),
}

impl Refusal {
    pub(crate) fn outcome(self) -> Outcome {
        match self {
            Refusal::OverRate | Refusal::OverConcurrency => Outcome::OverQuota,
            Refusal::Fault(f) => f.outcome(),
        }
    }
}

/// What every platform request goes through first, once: counted in the stats as a request of
/// `kind`, then the platform's rate and concurrency limits, then the injected faults. Keep the
/// answer's [`InFlight`] until the answer is built; report its outcome with [`done`].
pub(crate) async fn admit(
    st: &SimState,
    protocol: CarrierProtocol,
    kind: CallKind,
) -> Result<Option<InFlight>, Refusal> {
    st.0.stats.arrived(kind, super::wall_second());
    if !st.0.accounts.admit(protocol, super::wall_second()) {
        return Err(Refusal::OverRate);
    }
    let Some(place) = st.0.accounts.enter(protocol) else {
        return Err(Refusal::OverConcurrency);
    };
    if let Some(fault) = super::routes::inject(st, kind).await {
        return Err(Refusal::Fault(fault));
    }
    Ok(Some(place))
}

/// Records the outcome of a request [`admit`] counted.
pub(crate) fn done(st: &SimState, outcome: Outcome) {
    st.0.stats.ended(outcome);
}
