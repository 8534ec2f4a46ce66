//! The sentences of the explain page: what would change the decision, and a summary.

use crate::explain::{Explanation, PackageEvidence};
use domain::{NetworkStatus, PackageOwner, StopReason};

fn owner(o: PackageOwner) -> String {
    match o {
        PackageOwner::Card(c) => format!("card {c}"),
        PackageOwner::Device(d) => format!("device {d}"),
    }
}

fn limit(p: &PackageEvidence) -> String {
    p.limit_mb
        .map_or("unlimited".to_owned(), |l| format!("{l} MB"))
}

fn valid(e: &Explanation) -> impl Iterator<Item = &PackageEvidence> {
    e.packages.iter().filter(|p| p.valid)
}

fn earliest_reset(e: &Explanation) -> Option<String> {
    valid(e)
        .filter_map(|p| p.next_reset_at)
        .min()
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
}

/// Every condition that would change the decision.
pub(crate) fn would_change(e: &Explanation) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(ttl) = e.protect.stop_ttl_secs {
        out.push(format!(
            "the device's stop protect period ends in {ttl} s; until then the protect handler keeps the card stopped and automation does nothing"
        ));
    }
    if let Some(ttl) = e.protect.start_ttl_secs {
        out.push(format!(
            "the device's start protect period ends in {ttl} s; until then the protect handler keeps the card online and automation does nothing"
        ));
    }
    if e.decision.manual_stop {
        out.push(
            "stopped by an operator: only an operator's start (POST /cards/{id}/start) resumes it"
                .to_owned(),
        );
    }
    match e.decision.holding_reason {
        Some(StopReason::NotRealname) => out
            .push("real-name verification (real_name_status 1) would lift not_realname".to_owned()),
        Some(StopReason::NoPackage) => out.push(format!(
            "a valid package for {} (POST /package-usages) would lift no_package",
            owner(e.package_owner)
        )),
        Some(StopReason::TrafficExhausted) => {
            let mut s = format!(
                "a valid package with room for {} would lift traffic_exhausted",
                owner(e.package_owner)
            );
            if let Some(reset) = earliest_reset(e) {
                s.push_str(&format!(", as would the monthly reset on {reset}"));
            }
            out.push(s);
        }
        _ => {
            if !e.real_name.satisfied {
                out.push("real-name verification would be required".to_owned());
            } else if !e.real_name.industry_exemption {
                out.push("losing real-name verification would stop it (not_realname)".to_owned());
            }
            if let Some(end) = valid(e).filter_map(|p| p.expires_at).max() {
                out.push(format!(
                    "with no new package, it stops (no_package) when its last valid package expires at {}",
                    end.format("%Y-%m-%d %H:%M UTC")
                ));
            }
            for p in valid(e).filter(|p| p.limit_mb.is_some()) {
                out.push(format!(
                    "package {} stops it (traffic_exhausted) when used reaches {} (now {} MB), unless another valid package has room",
                    p.id,
                    limit(p),
                    p.used_mb
                ));
            }
        }
    }
    if e.config.is_none() {
        out.push("no enabled polling config matches: the card is not polled, so no poll will change anything; a matching config would".to_owned());
    }
    out
}

/// One sentence.
pub(crate) fn summary(e: &Explanation) -> String {
    let d = &e.decision;
    let state = match (d.network_status, d.stop_reason) {
        (NetworkStatus::Online, _) => "online".to_owned(),
        (NetworkStatus::Stopped, Some(r)) => format!("stopped: {r}"),
        (NetworkStatus::Stopped, None) => "stopped".to_owned(),
    };
    let evidence = match e.decision.holding_reason {
        Some(StopReason::NotRealname) => "not real-named and not an industry card".to_owned(),
        Some(StopReason::NoPackage) => format!("{} has no valid package", owner(e.package_owner)),
        Some(StopReason::TrafficExhausted) => {
            let used: Vec<String> = valid(e)
                .map(|p| format!("package {} used {} of {}", p.id, p.used_mb, limit(p)))
                .collect();
            used.join(", ")
        }
        _ => {
            let n = valid(e).count();
            format!("real-name satisfied, {n} valid package(s) with room")
        }
    };
    let next = match d.action.as_str() {
        "stop" => format!(
            "the next evaluation stops it ({})",
            d.reason.as_deref().unwrap_or("")
        ),
        "start" => "the next evaluation resumes it".to_owned(),
        "change_reason" => format!(
            "the next evaluation records reason {}",
            d.reason.as_deref().unwrap_or("")
        ),
        _ => match d.reason.as_deref() {
            Some("protect_period") => "a protect period holds it; automation waits".to_owned(),
            Some("manual_stop") => "an operator stopped it; automation never resumes it".to_owned(),
            _ => "no change is due".to_owned(),
        },
    };
    let hint = e
        .would_change
        .first()
        .map(|s| format!("; {s}"))
        .unwrap_or_default();
    format!("{state} — {evidence}; {next}{hint}")
}
