//! `GET /cards/{id}/explain`: why the card is where it is, and what would change it.
//!
//! The decision is the one `evaluate_and_act` would take now (`StopResumeService::preview`,
//! no lock, no action), with the facts it was taken from; then the config the card matches,
//! when each task type polls it next (the shard scores), its last state changes, and a list of
//! the conditions that would change the decision, ending in one sentence an operator can read.
//!
//! This file reads the facts and states them as phrases (`phrases`); `text.rs` holds the
//! phrase vocabulary and its English rendering and knows nothing of the facts (it uses nothing
//! from here).

pub(crate) mod text;

use crate::error::StoreResultExt;
use crate::{Admin, AdminError};
use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use domain::store::Page;
use domain::{
    Card, CardStateLog, Intervals, NetworkStatus, PackageOwner, PackageStatus, PollingConfigId,
    StopReason, TaskType,
};
use serde::{Deserialize, Serialize};
use text::{ExplainPhrases, Phrase, PhraseCode, english, summary};

/// One package of the card's owner, as the decision sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageEvidence {
    pub id: i64,
    pub status: PackageStatus,
    /// Active and inside its window now.
    pub valid: bool,
    /// Virtual megabytes used (decimal string).
    pub used_mb: rust_decimal::Decimal,
    /// `null`: unlimited.
    pub limit_mb: Option<rust_decimal::Decimal>,
    pub exhausted: bool,
    pub activated_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub next_reset_at: Option<DateTime<Utc>>,
    pub activate_on_realname: bool,
}

/// Real-name and the industry exemption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealNameEvidence {
    pub real_name_status: domain::RealNameStatus,
    pub card_category: domain::CardCategory,
    /// Industry cards are exempt from real-name verification.
    pub industry_exemption: bool,
    pub satisfied: bool,
}

/// The device's protect periods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectEvidence {
    pub device_id: Option<i64>,
    /// Seconds left of the stop period; `null`: none.
    pub stop_ttl_secs: Option<u64>,
    pub start_ttl_secs: Option<u64>,
}

/// The decision now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionNow {
    /// `stop`, `start`, `change_reason` or `nothing`: what `evaluate_and_act` would do now.
    pub action: String,
    /// The reason it would stop the card for, the reason it would record, or why nothing.
    pub reason: Option<String>,
    /// The stop reason that holds now (`not_realname` > `no_package` > `traffic_exhausted`).
    pub holding_reason: Option<StopReason>,
    pub network_status: domain::NetworkStatus,
    pub stop_reason: Option<StopReason>,
    /// Stopped by an operator: automation never resumes it.
    pub manual_stop: bool,
}

/// The config the card matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchedConfigView {
    pub id: PollingConfigId,
    pub name: String,
    pub priority: i32,
    pub intervals: Intervals,
}

/// When a task type polls the card next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextDue {
    pub task_type: TaskType,
    /// Whether the matched config schedules this type.
    pub scheduled: bool,
    /// The card's score in the shard queue; `null`: not queued.
    pub next_check_at: Option<DateTime<Utc>>,
    /// Waiting on the manual list (polled before the shard queues).
    pub manual: bool,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub card: Card,
    pub decision: DecisionNow,
    /// Whose packages cover the card: its device when bound, else itself.
    pub package_owner: PackageOwner,
    pub packages: Vec<PackageEvidence>,
    pub real_name: RealNameEvidence,
    pub protect: ProtectEvidence,
    /// `null`: no enabled config matches; the card is not polled.
    pub config: Option<MatchedConfigView>,
    pub next_due: Vec<NextDue>,
    /// The card's last stops, starts and reason changes, newest first.
    pub recent_changes: Vec<CardStateLog>,
    /// Conditions that would change the decision (English).
    pub would_change: Vec<String>,
    /// One sentence (English).
    pub summary: String,
    /// `summary` and `would_change` in machine-readable form: codes and parameters, for a
    /// client to render in its own language and time zone.
    pub phrases: ExplainPhrases,
    pub evaluated_at: DateTime<Utc>,
}

fn at(score: f64) -> Option<DateTime<Utc>> {
    let micros = (score * 1e6).round();
    if !micros.is_finite() {
        return None;
    }
    Utc.timestamp_micros(micros as i64).single()
}

impl Admin {
    pub async fn explain(&self, id: domain::CardId) -> Result<Explanation, AdminError> {
        let card = self.card(id).await?;
        let decision = self.stop_resume.preview(id).await?;
        let evidence = &decision.evidence;
        let now = evidence.evaluated_at;
        let owner = PackageOwner::covering(card.id, card.facts.device_id);
        let packages: Vec<PackageEvidence> = self
            .stores
            .packages
            .usages_of(owner)
            .await
            .admin()?
            .into_iter()
            .map(|u| PackageEvidence {
                id: u.id.get(),
                status: u.spec.status,
                valid: u.is_valid_at(now),
                used_mb: u.spec.used_mb,
                limit_mb: u.spec.data_limit_mb,
                exhausted: u.is_exhausted(),
                activated_at: u.spec.activated_at,
                expires_at: u.spec.expires_at,
                next_reset_at: u.spec.next_reset_at,
                activate_on_realname: u.spec.activate_on_realname,
            })
            .collect();
        let ttl = match card.facts.device_id {
            Some(d) => Some(self.inspector.protect_ttl(d).await?),
            None => None,
        };
        let protect = ProtectEvidence {
            device_id: card.facts.device_id.map(|d| d.get()),
            stop_ttl_secs: ttl.and_then(|t| t.stop).map(|d| d.as_secs()),
            start_ttl_secs: ttl.and_then(|t| t.start).map(|d| d.as_secs()),
        };
        let (action, reason) = match decision.action {
            stop_resume::Action::Stopped { reason } => ("stop", Some(reason.as_str().to_owned())),
            stop_resume::Action::Started => ("start", None),
            stop_resume::Action::ReasonChanged { to, .. } => {
                ("change_reason", Some(to.as_str().to_owned()))
            }
            stop_resume::Action::Nothing { why } => ("nothing", Some(why.as_str().to_owned())),
        };
        let decision_now = DecisionNow {
            action: action.to_owned(),
            reason,
            holding_reason: evidence.holding_reason,
            network_status: card.facts.network_status,
            stop_reason: card.stop_reason,
            manual_stop: card.stop_reason == Some(StopReason::Manual),
        };
        let snapshot = self.configs.snapshot();
        let config = snapshot.match_config(&card.match_fields()).and_then(|m| {
            snapshot
                .configs()
                .iter()
                .find(|c| c.id == m.id())
                .map(|c| MatchedConfigView {
                    id: c.id,
                    name: c.spec.name.clone(),
                    priority: c.spec.priority,
                    intervals: c.spec.intervals,
                })
        });
        let scores = self.inspector.scores(id).await?;
        let mut next_due = Vec::with_capacity(4);
        for task in TaskType::ALL {
            next_due.push(NextDue {
                task_type: task,
                scheduled: config
                    .as_ref()
                    .is_some_and(|c| c.intervals.get(task).is_some()),
                next_check_at: scores[task.index()].and_then(at),
                manual: self.inspector.in_manual(id, task).await?,
            });
        }
        let recent_changes = self
            .stores
            .cards
            .state_log(id, Page::new(1, 10))
            .await
            .admin()?
            .items;
        let real_name = RealNameEvidence {
            real_name_status: card.facts.real_name_status,
            card_category: card.facts.card_category,
            industry_exemption: card.facts.card_category == domain::CardCategory::Industry,
            satisfied: evidence.real_name_satisfied,
        };
        let mut out = Explanation {
            card,
            decision: decision_now,
            package_owner: owner,
            packages,
            real_name,
            protect,
            config,
            next_due,
            recent_changes,
            would_change: Vec::new(),
            summary: String::new(),
            phrases: ExplainPhrases::default(),
            evaluated_at: now,
        };
        out.phrases = phrases(&out);
        out.would_change = out.phrases.would_change.iter().map(english).collect();
        out.summary = summary(&out.phrases);
        Ok(out)
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn valid(e: &Explanation) -> impl Iterator<Item = &PackageEvidence> {
    e.packages.iter().filter(|p| p.valid)
}

fn used(code: PhraseCode, p: &PackageEvidence) -> Phrase {
    let phrase = Phrase::new(code)
        .with("package", p.id)
        .with("used_mb", p.used_mb);
    match p.limit_mb {
        Some(l) => phrase.with("limit_mb", l),
        None => phrase,
    }
}

fn change_phrases(e: &Explanation) -> Vec<Phrase> {
    use PhraseCode as C;
    let mut out = Vec::new();
    if let Some(ttl) = e.protect.stop_ttl_secs {
        out.push(Phrase::new(C::ChangeStopProtect).with("secs", ttl));
    }
    if let Some(ttl) = e.protect.start_ttl_secs {
        out.push(Phrase::new(C::ChangeStartProtect).with("secs", ttl));
    }
    if e.decision.manual_stop {
        out.push(Phrase::new(C::ChangeManualStop));
    }
    match e.decision.holding_reason {
        Some(StopReason::NotRealname) => out.push(Phrase::new(C::ChangeRealnameLifts)),
        Some(StopReason::NoPackage) => {
            out.push(Phrase::new(C::ChangePackageLiftsNoPackage).with_owner(e.package_owner));
        }
        Some(StopReason::TrafficExhausted) => {
            let p = Phrase::new(C::ChangePackageLiftsTraffic).with_owner(e.package_owner);
            out.push(match valid(e).filter_map(|p| p.next_reset_at).min() {
                Some(reset) => p.with("reset_at", rfc3339(reset)),
                None => p,
            });
        }
        _ => {
            if !e.real_name.satisfied {
                out.push(Phrase::new(C::ChangeRealnameRequired));
            } else if !e.real_name.industry_exemption {
                out.push(Phrase::new(C::ChangeLosingRealname));
            }
            if let Some(end) = valid(e).filter_map(|p| p.expires_at).max() {
                out.push(Phrase::new(C::ChangeLastPackageExpires).with("at", rfc3339(end)));
            }
            for p in valid(e).filter(|p| p.limit_mb.is_some()) {
                out.push(used(C::ChangePackageLimit, p));
            }
        }
    }
    if e.config.is_none() {
        out.push(Phrase::new(C::ChangeNoConfig));
    }
    out
}

/// The phrases of an explanation (every field but `phrases`, `summary` and `would_change`
/// filled in).
fn phrases(e: &Explanation) -> ExplainPhrases {
    use PhraseCode as C;
    let d = &e.decision;
    let state = match (d.network_status, d.stop_reason) {
        (NetworkStatus::Online, _) => Phrase::new(C::StateOnline),
        (NetworkStatus::Stopped, Some(r)) => Phrase::new(C::StateStopped).with("reason", r),
        (NetworkStatus::Stopped, None) => Phrase::new(C::StateStopped),
    };
    let evidence = match d.holding_reason {
        Some(StopReason::NotRealname) => vec![Phrase::new(C::EvidenceNotRealname)],
        Some(StopReason::NoPackage) => {
            vec![Phrase::new(C::EvidenceNoPackage).with_owner(e.package_owner)]
        }
        Some(StopReason::TrafficExhausted) => {
            valid(e).map(|p| used(C::EvidencePackageUsed, p)).collect()
        }
        _ => vec![Phrase::new(C::EvidenceSatisfied).with("valid_packages", valid(e).count())],
    };
    let reason = d.reason.clone().unwrap_or_default();
    let next = match d.action.as_str() {
        "stop" => Phrase::new(C::NextStop).with("reason", reason),
        "start" => Phrase::new(C::NextStart),
        "change_reason" => Phrase::new(C::NextChangeReason).with("reason", reason),
        _ => match d.reason.as_deref() {
            Some("protect_period") => Phrase::new(C::NextProtectPeriod),
            Some("manual_stop") => Phrase::new(C::NextManualStop),
            _ => Phrase::new(C::NextNothing),
        },
    };
    ExplainPhrases {
        state,
        evidence,
        next,
        would_change: change_phrases(e),
    }
}
