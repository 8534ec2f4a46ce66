//! The explain page's answer: the decision, its evidence, what would change it, and its
//! phrases in machine-readable form.

use crate::mirror::{mirror_enum, view};
use chrono::{DateTime, Utc};
use domain::{
    Card, CardStateLog, Intervals, PackageOwner, PackageStatus, PollingConfigId, StopReason,
    TaskType,
};
use std::collections::BTreeMap;

view! {
    /// The whole answer.
    struct Explanation from admin::Explanation {
        card: Card,
        decision: DecisionNow,
        /// Whose packages cover the card: its device when bound, else itself.
        package_owner: PackageOwner,
        packages: Vec<PackageEvidence>,
        real_name: RealNameEvidence,
        protect: ProtectEvidence,
        /// `null`: no enabled config matches; the card is not polled.
        config: Option<MatchedConfigView>,
        next_due: Vec<NextDue>,
        /// The card's last stops, starts and reason changes, newest first.
        recent_changes: Vec<CardStateLog>,
        /// Conditions that would change the decision (English).
        would_change: Vec<String>,
        /// One sentence (English).
        summary: String,
        /// `summary` and `would_change` in machine-readable form: codes and parameters, for a
        /// client to render in its own language and time zone.
        phrases: ExplainPhrases,
        evaluated_at: DateTime<Utc>,
    }
}

view! {
    /// The decision now.
    struct DecisionNow from admin::DecisionNow {
        /// `stop`, `start`, `change_reason` or `nothing`: what `evaluate_and_act` would do now.
        action: String,
        /// The reason it would stop the card for, the reason it would record, or why nothing.
        reason: Option<String>,
        /// The stop reason that holds now (`not_realname` > `no_package` > `traffic_exhausted`).
        holding_reason: Option<StopReason>,
        network_status: domain::NetworkStatus,
        stop_reason: Option<StopReason>,
        /// Stopped by an operator: automation never resumes it.
        manual_stop: bool,
    }
}

view! {
    /// One package of the card's owner, as the decision sees it.
    struct PackageEvidence from admin::PackageEvidence {
        id: i64,
        status: PackageStatus,
        /// Active and inside its window now.
        valid: bool,
        /// Virtual megabytes used (decimal string).
        #[schema(value_type = String)]
        used_mb: rust_decimal::Decimal,
        /// `null`: unlimited.
        #[schema(value_type = Option<String>)]
        limit_mb: Option<rust_decimal::Decimal>,
        exhausted: bool,
        activated_at: Option<DateTime<Utc>>,
        expires_at: Option<DateTime<Utc>>,
        next_reset_at: Option<DateTime<Utc>>,
        activate_on_realname: bool,
    }
}

view! {
    /// Real-name and the industry exemption.
    struct RealNameEvidence from admin::RealNameEvidence {
        real_name_status: domain::RealNameStatus,
        card_category: domain::CardCategory,
        /// Industry cards are exempt from real-name verification.
        industry_exemption: bool,
        satisfied: bool,
    }
}

view! {
    /// The device's protect periods.
    struct ProtectEvidence from admin::ProtectEvidence {
        device_id: Option<i64>,
        /// Seconds left of the stop period; `null`: none.
        stop_ttl_secs: Option<u64>,
        start_ttl_secs: Option<u64>,
    }
}

view! {
    /// The config the card matches.
    struct MatchedConfigView from admin::MatchedConfigView {
        id: PollingConfigId,
        name: String,
        priority: i32,
        intervals: Intervals,
    }
}

view! {
    /// When a task type polls the card next.
    struct NextDue from admin::NextDue {
        task_type: TaskType,
        /// Whether the matched config schedules this type.
        scheduled: bool,
        /// The card's score in the shard queue; `null`: not queued.
        next_check_at: Option<DateTime<Utc>>,
        /// Waiting on the manual list (polled before the shard queues).
        manual: bool,
    }
}

view! {
    /// The summary and the conditions that would change the decision, as phrases. The summary
    /// reads `state — evidence, …; next; first would_change`.
    struct ExplainPhrases from admin::ExplainPhrases {
        state: Phrase,
        evidence: Vec<Phrase>,
        next: Phrase,
        /// Item for item the `would_change` texts.
        would_change: Vec<Phrase>,
    }
}

view! {
    /// One phrase: a code and its parameters (numbers as decimal strings, times as RFC 3339).
    struct Phrase from admin::Phrase {
        code: PhraseCode,
        params: BTreeMap<String, String>,
    }
}

mirror_enum! {
    /// What a phrase says; its parameters are listed with each code.
    #[serde(rename_all = "snake_case")]
    // What each code says, and its parameters: `admin::PhraseCode`.
    enum PhraseCode mirrors admin::PhraseCode {
        StateOnline, StateStopped, EvidenceNotRealname, EvidenceNoPackage, EvidencePackageUsed,
        EvidenceSatisfied, NextStop, NextStart, NextChangeReason, NextProtectPeriod,
        NextManualStop, NextNothing, ChangeStopProtect, ChangeStartProtect, ChangeManualStop,
        ChangeRealnameLifts, ChangePackageLiftsNoPackage, ChangePackageLiftsTraffic,
        ChangeRealnameRequired, ChangeLosingRealname, ChangeLastPackageExpires,
        ChangePackageLimit, ChangeNoConfig,
    }
}
