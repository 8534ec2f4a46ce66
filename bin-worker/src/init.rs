//! `cmp-worker init [--repair]`: fills the queues from the database.

use crate::components::Components;
use lifecycle::InitMode;
use settings::Settings;

pub(crate) async fn run(settings: Settings, repair: bool) -> anyhow::Result<()> {
    let c = Components::connect(settings).await?;
    let mode = if repair {
        InitMode::Repair
    } else {
        InitMode::Initial
    };
    let watch = c.initializer.clone();
    let progress = tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            if let Ok(Some(p)) = watch.progress().await {
                eprintln!(
                    "initializer: {} of {} cards, {} unmatched",
                    p.processed, p.total, p.unmatched
                );
            }
        }
    });
    let result = c.initializer.run(mode).await;
    progress.abort();
    let report = result?;
    println!(
        "initialised {} cards ({} unmatched, {} new queue entries) in {:.1}s",
        report.processed,
        report.unmatched,
        report.added,
        report.elapsed.as_secs_f64()
    );
    Ok(())
}
