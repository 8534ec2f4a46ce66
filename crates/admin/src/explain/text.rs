//! The sentences of the explain page, built once in machine-readable form — a [`Phrase`] is a
//! code and its parameters — and rendered into the English `summary` and `would_change` texts
//! from those same phrases. A client (the dashboard) renders the phrases in its own language
//! and time zone; the English texts stay for API users.
//!
//! Which phrases an explanation says is decided from its facts in `mod.rs`; this file only
//! knows the vocabulary and renders it.

use chrono::{DateTime, Utc};
use domain::PackageOwner;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a phrase says; its parameters are listed with each code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhraseCode {
    /// The card is online.
    #[default]
    StateOnline,
    /// The card is stopped; `reason` (absent: none recorded).
    StateStopped,
    /// Not real-named and not an industry card.
    EvidenceNotRealname,
    /// `owner_kind` (`card`/`device`) `owner_id` has no valid package.
    EvidenceNoPackage,
    /// Valid package `package` used `used_mb` of `limit_mb` (absent: unlimited).
    EvidencePackageUsed,
    /// Real-name satisfied, `valid_packages` valid package(s) with room.
    EvidenceSatisfied,
    /// The next evaluation stops it for `reason`.
    NextStop,
    /// The next evaluation resumes it.
    NextStart,
    /// The next evaluation records reason `reason`.
    NextChangeReason,
    /// A protect period holds it; automation waits.
    NextProtectPeriod,
    /// An operator stopped it; automation never resumes it.
    NextManualStop,
    /// No change is due.
    NextNothing,
    /// The device's stop protect period ends in `secs` seconds.
    ChangeStopProtect,
    /// The device's start protect period ends in `secs` seconds.
    ChangeStartProtect,
    /// Only an operator's start resumes it.
    ChangeManualStop,
    /// Real-name verification would lift `not_realname`.
    ChangeRealnameLifts,
    /// A valid package for `owner_kind` `owner_id` would lift `no_package`.
    ChangePackageLiftsNoPackage,
    /// A valid package with room for `owner_kind` `owner_id` would lift `traffic_exhausted`,
    /// as would the monthly reset at `reset_at` (RFC 3339; absent: no reset known).
    ChangePackageLiftsTraffic,
    /// Real-name verification would be required.
    ChangeRealnameRequired,
    /// Losing real-name verification would stop it.
    ChangeLosingRealname,
    /// With no new package it stops (`no_package`) when its last valid package expires at
    /// `at` (RFC 3339).
    ChangeLastPackageExpires,
    /// Package `package` stops it when used reaches `limit_mb` (now `used_mb`), unless another
    /// valid package has room.
    ChangePackageLimit,
    /// No enabled polling config matches: the card is not polled.
    ChangeNoConfig,
}

/// One phrase: a code and its parameters (numbers as decimal strings, times as RFC 3339).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phrase {
    pub code: PhraseCode,
    pub params: BTreeMap<String, String>,
}

impl Phrase {
    pub(crate) fn new(code: PhraseCode) -> Self {
        Phrase {
            code,
            params: BTreeMap::new(),
        }
    }

    pub(crate) fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.params.insert(key.to_owned(), value.to_string());
        self
    }

    pub(crate) fn with_owner(self, o: PackageOwner) -> Self {
        match o {
            PackageOwner::Card(c) => self.with("owner_kind", "card").with("owner_id", c),
            PackageOwner::Device(d) => self.with("owner_kind", "device").with("owner_id", d),
        }
    }

    fn param(&self, key: &str) -> &str {
        self.params.get(key).map_or("", String::as_str)
    }
}

/// The summary and the conditions that would change the decision, as phrases. The summary
/// reads `state — evidence, …; next; first would_change`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainPhrases {
    pub state: Phrase,
    pub evidence: Vec<Phrase>,
    pub next: Phrase,
    /// Item for item the `would_change` texts.
    pub would_change: Vec<Phrase>,
}

fn owner(p: &Phrase) -> String {
    format!("{} {}", p.param("owner_kind"), p.param("owner_id"))
}

fn limit(p: &Phrase) -> String {
    p.params
        .get("limit_mb")
        .map_or("unlimited".to_owned(), |l| format!("{l} MB"))
}

fn minute(rfc: &str) -> String {
    DateTime::parse_from_rfc3339(rfc).map_or(rfc.to_owned(), |t| {
        t.with_timezone(&Utc)
            .format("%Y-%m-%d %H:%M UTC")
            .to_string()
    })
}

/// A phrase in English (the API's `summary` and `would_change` texts).
pub(crate) fn english(p: &Phrase) -> String {
    use PhraseCode as C;
    match p.code {
        C::StateOnline => "online".to_owned(),
        C::StateStopped => match p.params.get("reason") {
            Some(r) => format!("stopped: {r}"),
            None => "stopped".to_owned(),
        },
        C::EvidenceNotRealname => "not real-named and not an industry card".to_owned(),
        C::EvidenceNoPackage => format!("{} has no valid package", owner(p)),
        C::EvidencePackageUsed => format!(
            "package {} used {} of {}",
            p.param("package"),
            p.param("used_mb"),
            limit(p)
        ),
        C::EvidenceSatisfied => format!(
            "real-name satisfied, {} valid package(s) with room",
            p.param("valid_packages")
        ),
        C::NextStop => format!("the next evaluation stops it ({})", p.param("reason")),
        C::NextStart => "the next evaluation resumes it".to_owned(),
        C::NextChangeReason => format!("the next evaluation records reason {}", p.param("reason")),
        C::NextProtectPeriod => "a protect period holds it; automation waits".to_owned(),
        C::NextManualStop => "an operator stopped it; automation never resumes it".to_owned(),
        C::NextNothing => "no change is due".to_owned(),
        C::ChangeStopProtect => format!(
            "the device's stop protect period ends in {} s; until then the protect handler keeps the card stopped and automation does nothing",
            p.param("secs")
        ),
        C::ChangeStartProtect => format!(
            "the device's start protect period ends in {} s; until then the protect handler keeps the card online and automation does nothing",
            p.param("secs")
        ),
        C::ChangeManualStop => {
            "stopped by an operator: only an operator's start (POST /cards/{id}/start) resumes it"
                .to_owned()
        }
        C::ChangeRealnameLifts => {
            "real-name verification (real_name_status 1) would lift not_realname".to_owned()
        }
        C::ChangePackageLiftsNoPackage => format!(
            "a valid package for {} (POST /package-usages) would lift no_package",
            owner(p)
        ),
        C::ChangePackageLiftsTraffic => {
            let mut s = format!(
                "a valid package with room for {} would lift traffic_exhausted",
                owner(p)
            );
            if let Some(reset) = p.params.get("reset_at") {
                s.push_str(&format!(", as would the monthly reset on {}", minute(reset)));
            }
            s
        }
        C::ChangeRealnameRequired => "real-name verification would be required".to_owned(),
        C::ChangeLosingRealname => {
            "losing real-name verification would stop it (not_realname)".to_owned()
        }
        C::ChangeLastPackageExpires => format!(
            "with no new package, it stops (no_package) when its last valid package expires at {}",
            minute(p.param("at"))
        ),
        C::ChangePackageLimit => format!(
            "package {} stops it (traffic_exhausted) when used reaches {} (now {} MB), unless another valid package has room",
            p.param("package"),
            limit(p),
            p.param("used_mb")
        ),
        C::ChangeNoConfig => "no enabled polling config matches: the card is not polled, so no poll will change anything; a matching config would".to_owned(),
    }
}

/// The one-sentence English summary of the phrases.
pub(crate) fn summary(p: &ExplainPhrases) -> String {
    let evidence: Vec<String> = p.evidence.iter().map(english).collect();
    let hint = p
        .would_change
        .first()
        .map(|s| format!("; {}", english(s)))
        .unwrap_or_default();
    format!(
        "{} — {}; {}{hint}",
        english(&p.state),
        evidence.join(", "),
        english(&p.next)
    )
}
