//! `cmp-worker check [--repair]`: the queues checked against the database; exit 1 when
//! anything was wrong (also when `--repair` fixed it: a second run tells that it is clean).

use crate::components::Components;
use lifecycle::{CheckReport, CheckSettings, Kind, QueueChecker};
use settings::Settings;

pub(crate) async fn run(settings: Settings, repair: bool) -> anyhow::Result<()> {
    let c = Components::connect(settings).await?;
    let checker = checker(&c, repair);
    let started = std::time::Instant::now();
    let report = checker.run().await?;
    print_summary(&report, repair, started.elapsed());
    if report.clean() {
        Ok(())
    } else {
        let total: u64 = report.findings.iter().map(|f| f.count).sum();
        anyhow::bail!("{total} queue entries were wrong")
    }
}

/// The checker of `cmp-worker check` and of the periodic job.
pub(crate) fn checker(c: &Components, repair: bool) -> QueueChecker {
    QueueChecker::new(
        c.core.stores.cards.clone(),
        c.core.queue.clone(),
        c.core.configs.clone(),
        c.core.clock.clone(),
        CheckSettings {
            shard_count: c.settings.shard_count,
            repair,
            ..CheckSettings::default()
        },
    )
}

fn print_summary(report: &CheckReport, repair: bool, elapsed: std::time::Duration) {
    println!(
        "checked {} polling-enabled cards and {} queue members in {:.1}s",
        report.cards,
        report.members,
        elapsed.as_secs_f64()
    );
    for kind in Kind::ALL {
        let findings = report.of(kind);
        let examples: Vec<String> = findings
            .examples
            .iter()
            .map(|(member, task)| format!("{member}/{task}"))
            .collect();
        let repaired = if repair {
            format!(", {} repaired", findings.repaired)
        } else {
            String::new()
        };
        println!(
            "{:<12} {}{repaired}{}{}",
            kind.as_str(),
            findings.count,
            if examples.is_empty() { "" } else { "  e.g. " },
            examples.join(" ")
        );
    }
    println!("{}", if report.clean() { "clean" } else { "NOT CLEAN" });
}
