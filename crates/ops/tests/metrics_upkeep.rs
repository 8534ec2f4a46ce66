//! The recorder keeps histogram samples until something drains them. A process nobody scrapes
//! must still hold its memory flat: the upkeep thread drains them. This file is its own test
//! binary so that nothing else in the process moves its resident size.

use metrics::Recorder;
use std::time::Duration;

const BATCHES: usize = 40;
const SAMPLES_PER_BATCH: usize = 250_000;
/// What the samples would hold if nothing drained them: 8 bytes each, 80 MB in all.
const UNDRAINED_BYTES: u64 = (BATCHES * SAMPLES_PER_BATCH * 8) as u64;

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("statm's second field is the resident page count");
    pages * 4096
}

/// Records every sample into one histogram of `recorder`, pausing between batches so that an
/// upkeep thread gets to run, and returns how far the resident size grew.
fn growth_while_recording(recorder: &metrics_exporter_prometheus::PrometheusRecorder) -> u64 {
    let key = metrics::Key::from_name("cmp_test_upkeep_seconds");
    let metadata = metrics::Metadata::new(module_path!(), metrics::Level::INFO, None);
    let histogram = recorder.register_histogram(&key, &metadata);
    let before = resident_bytes();
    let mut peak = before;
    for _ in 0..BATCHES {
        for i in 0..SAMPLES_PER_BATCH {
            histogram.record((i % 1000) as f64 / 1000.0);
        }
        peak = peak.max(resident_bytes());
        std::thread::sleep(Duration::from_millis(30));
    }
    peak.saturating_sub(before)
}

#[test]
fn histogram_samples_nobody_scrapes_do_not_accumulate() -> anyhow::Result<()> {
    let drained = ops::metrics_builder()?.build_recorder();
    ops::spawn_metrics_upkeep(drained.handle(), Duration::from_millis(10))?;
    let with_upkeep = growth_while_recording(&drained);

    // The same load on a recorder without upkeep shows the measurement can see the difference.
    let undrained = ops::metrics_builder()?.build_recorder();
    let without_upkeep = growth_while_recording(&undrained);

    assert!(
        without_upkeep > UNDRAINED_BYTES / 2,
        "without upkeep the samples should stay resident: grew {without_upkeep} bytes"
    );
    assert!(
        with_upkeep < UNDRAINED_BYTES / 3,
        "with upkeep the resident size grew {with_upkeep} bytes for {UNDRAINED_BYTES} bytes of samples"
    );
    // The drained samples went into the buckets. Not exactly all of them: metrics-util's
    // bucket drops samples pushed while a drain swaps its blocks out (2 of 10 million seen on a
    // quiet machine, 0.4% on a loaded one), as it does under a scrape's render, which drains
    // too. Memory is what this test holds; the count only shows the drains reached the buckets.
    let text = drained.handle().render();
    let count: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("cmp_test_upkeep_seconds_count "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in:\n{text}"));
    let recorded = (BATCHES * SAMPLES_PER_BATCH) as f64;
    assert!(
        count >= recorded * 0.9 && count <= recorded,
        "{count} of {recorded} samples counted"
    );
    Ok(())
}
