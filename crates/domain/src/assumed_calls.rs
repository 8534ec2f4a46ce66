//! [`AssumedCalls`]: the calls an operator lets a carrier's adapter make although no public
//! source shows them (`CarrierLimits::assumed_calls`, off by default).

use serde::{Deserialize, Serialize};

/// A capability an adapter may serve with a call no public source shows (see
/// [`CarrierLimits::assumed_calls`]). Each protocol's page says which path, if any, it means.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssumedCall {
    /// Real-name status of many cards in one call.
    RealnameBatch,
    /// Month-to-date usage of many cards in one call.
    UsageBatch,
    /// Network status of many cards in one call.
    NetworkStatusBatch,
}

impl AssumedCall {
    pub const ALL: [AssumedCall; 3] = [
        AssumedCall::RealnameBatch,
        AssumedCall::UsageBatch,
        AssumedCall::NetworkStatusBatch,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            AssumedCall::RealnameBatch => "realname_batch",
            AssumedCall::UsageBatch => "usage_batch",
            AssumedCall::NetworkStatusBatch => "network_status_batch",
        }
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl std::str::FromStr for AssumedCall {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        AssumedCall::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or(())
    }
}

/// A set of [`AssumedCall`]s; on the wire a list of their names, e.g. `["usage_batch"]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AssumedCalls(u8);

impl AssumedCalls {
    /// None: documented calls only.
    pub const NONE: AssumedCalls = AssumedCalls(0);

    /// Every assumed call.
    pub const fn all() -> Self {
        AssumedCalls(0b111)
    }

    pub const fn is_empty(&self) -> bool {
        self.0 == 0
    }

    pub const fn contains(self, call: AssumedCall) -> bool {
        self.0 & call.bit() != 0
    }

    #[must_use]
    pub const fn with(self, call: AssumedCall) -> Self {
        AssumedCalls(self.0 | call.bit())
    }

    #[must_use]
    pub const fn without(self, call: AssumedCall) -> Self {
        AssumedCalls(self.0 & !call.bit())
    }

    /// The calls of the set, in [`AssumedCall::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = AssumedCall> {
        AssumedCall::ALL
            .into_iter()
            .filter(move |c| self.contains(*c))
    }

    /// Their names (the stored and wire form).
    pub fn names(self) -> Vec<String> {
        self.iter().map(|c| c.as_str().to_owned()).collect()
    }
}

impl FromIterator<AssumedCall> for AssumedCalls {
    fn from_iter<I: IntoIterator<Item = AssumedCall>>(iter: I) -> Self {
        iter.into_iter()
            .fold(AssumedCalls::NONE, AssumedCalls::with)
    }
}

impl Serialize for AssumedCalls {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for AssumedCalls {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Vec::<AssumedCall>::deserialize(d)?.into_iter().collect())
    }
}
