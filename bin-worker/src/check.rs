//! `cmp-worker check [--repair]`: the queues checked against the database. Exit codes: 0 clean;
//! 1 wrong entries found (without `--repair`), or found and every one repaired (a second run
//! tells that it is clean); 3 `--repair` could not repair them all; any other failure (no
//! database, no Redis) is 1 with an error line.

use crate::components::Components;
use lifecycle::{CheckReport, CheckSettings, Kind, QueueChecker};
use ops::Finished;
use settings::Settings;
use tracing::Level;

/// `--repair` left entries wrong.
pub(crate) const EXIT_NOT_REPAIRED: u8 = 3;

pub(crate) async fn run(settings: Settings, repair: bool) -> anyhow::Result<()> {
    let c = Components::connect(settings).await?;
    let checker = checker(&c, repair);
    let started = std::time::Instant::now();
    let report = checker.run().await?;
    print_summary(&report, repair, started.elapsed());
    match verdict(&report, repair) {
        None => Ok(()),
        Some(done) => Err(done.into()),
    }
}

/// What the run's end says: `None` when clean.
fn verdict(report: &CheckReport, repair: bool) -> Option<Finished> {
    if report.clean() {
        return None;
    }
    let found: u64 = report.findings.iter().map(|f| f.count).sum();
    let repaired: u64 = report
        .findings
        .iter()
        .map(|f| f.repaired.min(f.count))
        .sum();
    Some(if !repair {
        Finished {
            code: 1,
            level: Level::WARN,
            message: format!("{found} queue entries were wrong (run with --repair to fix them)"),
        }
    } else if repaired == found {
        Finished {
            code: 1,
            level: Level::INFO,
            message: format!("{found} queue entries were wrong, all repaired"),
        }
    } else {
        Finished {
            code: EXIT_NOT_REPAIRED,
            level: Level::ERROR,
            message: format!(
                "{found} queue entries were wrong, {} could not be repaired",
                found - repaired
            ),
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use lifecycle::Findings;

    fn report(count: u64, repaired: u64) -> CheckReport {
        let mut r = CheckReport::default();
        r.findings[0] = Findings {
            count,
            examples: Vec::new(),
            repaired,
        };
        r
    }

    #[test]
    fn exit_codes_say_clean_found_repaired_and_not_repaired() {
        assert!(verdict(&report(0, 0), true).is_none());
        let found = verdict(&report(5, 0), false).expect("found");
        assert_eq!((found.code, found.level), (1, Level::WARN));
        let repaired = verdict(&report(5, 5), true).expect("found");
        assert_eq!((repaired.code, repaired.level), (1, Level::INFO));
        let short = verdict(&report(5, 3), true).expect("found");
        assert_eq!((short.code, short.level), (EXIT_NOT_REPAIRED, Level::ERROR));
        assert!(
            short.message.contains("2 could not be repaired"),
            "{}",
            short.message
        );
    }
}
