//! The decision table of `docs/rules.md` ("Stop / resume") as a pure function: no I/O, no clock of
//! its own. [`decide`] takes the card, its packages, its device's protect state and "now", and
//! answers the [`Decision`] the service then carries out.

use chrono::{DateTime, Utc};
use domain::{
    Card, CardCategory, CardId, Megabytes, NetworkStatus, PackageOwner, PackageUsage,
    RealNameStatus, StopReason,
};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Which protect periods the card's device is in (both `false` for a standalone card).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectEvidence {
    /// `polling:protect:stop:{device}` exists.
    pub stop: bool,
    /// `polling:protect:start:{device}` exists.
    pub start: bool,
}

impl ProtectEvidence {
    /// Either key exists: the protect handler owns the card.
    pub fn active(self) -> bool {
        self.stop || self.start
    }
}

impl From<polling_queue::ProtectState> for ProtectEvidence {
    fn from(s: polling_queue::ProtectState) -> Self {
        Self {
            stop: s.stop,
            start: s.start,
        }
    }
}

/// What the decision was made from, so that a log line or the API can explain it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Whose packages cover the card: its device when bound, else the card itself.
    pub owner: PackageOwner,
    /// Packages of `owner` valid at `evaluated_at` (active, inside their window).
    pub valid_packages: usize,
    /// Valid packages whose `used_mb >= data_limit_mb`.
    pub exhausted_packages: usize,
    /// Virtual megabytes used, summed over the valid packages.
    pub used_mb: Megabytes,
    /// Virtual megabytes sold, summed over the valid packages; `None`: a valid package is
    /// unlimited.
    pub limit_mb: Option<Megabytes>,
    pub real_name_status: RealNameStatus,
    pub card_category: CardCategory,
    /// Verified, or an industry card (carrier exemption).
    pub real_name_satisfied: bool,
    pub protect: ProtectEvidence,
    /// The card's state before the decision.
    pub network_status: NetworkStatus,
    pub stop_reason: Option<StopReason>,
    /// The stop reason that holds now (`not_realname` > `no_package` > `traffic_exhausted`);
    /// `None`: nothing stands in the way of service.
    pub holding_reason: Option<StopReason>,
    pub evaluated_at: DateTime<Utc>,
}

/// Why nothing was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NothingWhy {
    /// A protect key of the card's device exists: the protect handler owns the card.
    ProtectPeriod,
    /// Stopped, and already for the reason that holds.
    AlreadyStopped,
    /// Stopped by an operator (`manual`): automation never lifts or rewrites it.
    ManualStop,
    /// Online and nothing stands in the way of service.
    AlreadyOnline,
}

impl NothingWhy {
    pub const fn as_str(self) -> &'static str {
        match self {
            NothingWhy::ProtectPeriod => "protect_period",
            NothingWhy::AlreadyStopped => "already_stopped",
            NothingWhy::ManualStop => "manual_stop",
            NothingWhy::AlreadyOnline => "already_online",
        }
    }
}

/// The action of a decision: planned by [`decide`], and the action taken once the service
/// returns it (a failed action comes back as an error instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Action {
    /// Gateway stop, then `network_status = 0, stop_reason = reason`.
    Stopped {
        reason: StopReason,
    },
    /// Gateway start, then `network_status = 1, stop_reason = ''`.
    Started,
    /// The card stays stopped; only the recorded reason changes (no gateway call). `from` is
    /// `None` for a stopped card that carried no reason.
    ReasonChanged {
        from: Option<StopReason>,
        to: StopReason,
    },
    Nothing {
        why: NothingWhy,
    },
}

impl Action {
    /// The `action` label of `cmp_stop_resume_decisions_total`.
    pub const fn label(self) -> &'static str {
        match self {
            Action::Stopped { .. } => "stopped",
            Action::Started => "started",
            Action::ReasonChanged { .. } => "reason_changed",
            Action::Nothing { .. } => "nothing",
        }
    }
}

/// One decision about one card: what is (or was) done, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub card_id: CardId,
    pub action: Action,
    pub evidence: Evidence,
}

impl Decision {
    /// Brings `card` in line with what carrying out this decision did; whether the network
    /// status changed (a fact config matching reads). A reason change only rewrites the reason.
    pub fn apply_to(&self, card: &mut Card) -> bool {
        let before = card.facts.network_status;
        match self.action {
            Action::Stopped { reason } | Action::ReasonChanged { to: reason, .. } => {
                card.facts.network_status = NetworkStatus::Stopped;
                card.stop_reason = Some(reason);
            }
            Action::Started => {
                card.facts.network_status = NetworkStatus::Online;
                card.stop_reason = None;
            }
            Action::Nothing { .. } => {}
        }
        card.facts.network_status != before
    }
}

/// Gathers the evidence: packages of the covering owner only (`docs/rules.md`, "Stop / resume":
/// a bound card is covered by its device's packages, never by rows that name the card itself).
pub fn evidence(
    card: &Card,
    packages: &[PackageUsage],
    protect: ProtectEvidence,
    now: DateTime<Utc>,
) -> Evidence {
    let owner = PackageOwner::covering(card.id, card.facts.device_id);
    let valid: Vec<&PackageUsage> = packages
        .iter()
        .filter(|p| p.spec.owner == owner && p.is_valid_at(now))
        .collect();
    let exhausted_packages = valid.iter().filter(|p| p.is_exhausted()).count();
    let used_mb = valid.iter().map(|p| p.spec.used_mb).sum();
    let limit_mb = valid.iter().try_fold(Decimal::ZERO, |sum, p| {
        p.spec.data_limit_mb.map(|l| sum + l)
    });
    let real_name_satisfied = card.real_name_satisfied();
    let holding_reason = if !real_name_satisfied {
        Some(StopReason::NotRealname)
    } else if valid.is_empty() {
        Some(StopReason::NoPackage)
    } else if exhausted_packages == valid.len() {
        Some(StopReason::TrafficExhausted)
    } else {
        None
    };
    Evidence {
        owner,
        valid_packages: valid.len(),
        exhausted_packages,
        used_mb,
        limit_mb,
        real_name_status: card.facts.real_name_status,
        card_category: card.facts.card_category,
        real_name_satisfied,
        protect,
        network_status: card.facts.network_status,
        stop_reason: card.stop_reason,
        holding_reason,
        evaluated_at: now,
    }
}

/// The decision table, row by row:
///
/// | protect | reason | network | stop_reason now | action |
/// | --- | --- | --- | --- | --- |
/// | a key exists | any | any | any | nothing |
/// | none | some R | online | — | stop for R |
/// | none | some R | stopped | automatic (or none), not R | reason R, no gateway call |
/// | none | some R | stopped | R, or `manual` | nothing |
/// | none | none | stopped | automatic (or none) | start |
/// | none | none | stopped | `manual` | nothing |
/// | none | none | online | — | nothing |
///
/// A stopped card without a recorded reason (imported stopped, or stopped before reasons were
/// kept) is treated like an automatic stop: only `manual` is the operator's, and only `manual`
/// is protected from automation (invariant 5).
pub fn decide(
    card: &Card,
    packages: &[PackageUsage],
    protect: ProtectEvidence,
    now: DateTime<Utc>,
) -> Decision {
    let evidence = evidence(card, packages, protect, now);
    let action = plan(&evidence);
    Decision {
        card_id: card.id,
        action,
        evidence,
    }
}

/// Whether the decision table, given the card and its owner's valid packages as a usage write
/// just left them, asks for a stop, a start or a reason change. What a usage write (the usage
/// poll, a carrier's push stream) asks before it pays for
/// [`StopResumeService::evaluate`](crate::StopResumeService::evaluate), which takes the card's
/// lock and decides again on fresh reads. A table that says "nothing" without the device's
/// protect period also says "nothing" with it, so skipping the locked evaluation never skips an
/// action the table would take.
pub fn table_asks_for_action(card: &Card, packages: &[PackageUsage], now: DateTime<Utc>) -> bool {
    let preview = decide(card, packages, ProtectEvidence::default(), now);
    !matches!(preview.action, Action::Nothing { .. })
}

fn plan(e: &Evidence) -> Action {
    use NetworkStatus::{Online, Stopped};
    if e.protect.active() {
        return Action::Nothing {
            why: NothingWhy::ProtectPeriod,
        };
    }
    match (e.holding_reason, e.network_status, e.stop_reason) {
        (Some(reason), Online, _) => Action::Stopped { reason },
        (Some(_), Stopped, Some(StopReason::Manual))
        | (None, Stopped, Some(StopReason::Manual)) => Action::Nothing {
            why: NothingWhy::ManualStop,
        },
        (Some(r), Stopped, Some(now)) if now == r => Action::Nothing {
            why: NothingWhy::AlreadyStopped,
        },
        (Some(to), Stopped, from) => Action::ReasonChanged { from, to },
        (None, Stopped, _) => Action::Started,
        (None, Online, _) => Action::Nothing {
            why: NothingWhy::AlreadyOnline,
        },
    }
}

#[cfg(test)]
#[path = "decision_tests/mod.rs"]
mod tests;
