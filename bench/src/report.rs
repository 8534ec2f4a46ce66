//! The rows of the report: printed as a table and written as JSON.

use anyhow::Context;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What a row must reach to pass.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub(crate) enum Target {
    /// The ratio ours / reference must not exceed this.
    RatioAtMost(f64),
    /// The ratio ours / reference must reach this.
    RatioAtLeast(f64),
    /// The figure itself must reach this.
    FigureAtLeast(f64),
    /// The figure itself must not exceed this.
    FigureAtMost(f64),
    /// No target: a figure of the budget, reported so that a change shows.
    Reported,
}

impl Target {
    fn describe(self, unit: &str) -> String {
        match self {
            Target::RatioAtMost(v) => format!("ratio <= {v}"),
            Target::RatioAtLeast(v) => format!("ratio >= {v}"),
            Target::FigureAtLeast(v) => format!(">= {} {unit}", fmt_num(v)),
            Target::FigureAtMost(v) => format!("<= {} {unit}", fmt_num(v)),
            Target::Reported => "reported".to_owned(),
        }
    }

    /// `(met, by how much when missed)`.
    fn check(self, figure: f64, ratio: Option<f64>) -> (Option<bool>, Option<String>) {
        let (value, limit, at_most, what) = match self {
            Target::RatioAtMost(l) => (ratio, l, true, "ratio"),
            Target::RatioAtLeast(l) => (ratio, l, false, "ratio"),
            Target::FigureAtLeast(l) => (Some(figure), l, false, "figure"),
            Target::FigureAtMost(l) => (Some(figure), l, true, "figure"),
            Target::Reported => return (None, None),
        };
        let Some(v) = value.filter(|v| v.is_finite()) else {
            return (None, None);
        };
        let met = if at_most { v <= limit } else { v >= limit };
        if met {
            return (Some(true), None);
        }
        let miss = if at_most {
            format!(
                "{what} {} is {:.0}% over the limit {}",
                fmt_num(v),
                (v / limit - 1.0) * 100.0,
                fmt_num(limit)
            )
        } else {
            format!(
                "{what} {} is {:.0}% short of {} (needs {:.1}x)",
                fmt_num(v),
                (1.0 - v / limit) * 100.0,
                fmt_num(limit),
                limit / v.max(f64::MIN_POSITIVE)
            )
        };
        (Some(false), Some(miss))
    }
}

/// One line of the table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub(crate) scenario: String,
    pub(crate) figure: f64,
    pub(crate) unit: String,
    /// The side-by-side measurement of the same run (`None`: the target is absolute).
    pub(crate) reference: Option<f64>,
    pub(crate) reference_label: String,
    pub(crate) ratio: Option<f64>,
    pub(crate) target: Target,
    pub(crate) target_text: String,
    /// `None`: not measured (the scenario is not available yet).
    pub(crate) met: Option<bool>,
    pub(crate) miss: Option<String>,
    pub(crate) notes: Vec<String>,
}

impl Row {
    /// A measured row; the ratio is figure / reference when there is a reference.
    pub(crate) fn new(
        scenario: impl Into<String>,
        figure: f64,
        unit: &str,
        reference: Option<(f64, &str)>,
        target: Target,
    ) -> Row {
        let ratio = reference.map(|(r, _)| figure / r);
        let (met, miss) = target.check(figure, ratio);
        Row {
            scenario: scenario.into(),
            figure,
            unit: unit.to_owned(),
            reference: reference.map(|(r, _)| r),
            reference_label: reference.map(|(_, l)| l.to_owned()).unwrap_or_default(),
            ratio,
            target,
            target_text: target.describe(unit),
            met,
            miss,
            notes: Vec::new(),
        }
    }

    /// A row that could not be measured; says why.
    pub(crate) fn unavailable(
        scenario: impl Into<String>,
        unit: &str,
        target: Target,
        why: &str,
    ) -> Row {
        let mut row = Row::new(scenario, f64::NAN, unit, None, target);
        row.notes.push(why.to_owned());
        row
    }

    pub(crate) fn note(mut self, note: impl Into<String>) -> Row {
        self.notes.push(note.into());
        self
    }
}

/// The whole report as written to JSON.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) commit: String,
    pub(crate) started_at: String,
    pub(crate) elapsed_secs: f64,
    pub(crate) cpus: usize,
    pub(crate) sizes: serde_json::Value,
    pub(crate) rows: Vec<Row>,
}

pub(crate) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_owned();
    }
    let a = v.abs();
    if a >= 100_000.0 {
        group(v.round() as i64)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn group(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// The table, as printed at the end of a run.
pub(crate) fn table(rows: &[Row]) -> String {
    let head = ["scenario", "figure", "reference", "ratio", "target", "met?"];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            let figure = if r.figure.is_finite() {
                format!("{} {}", fmt_num(r.figure), r.unit)
            } else {
                "-".to_owned()
            };
            let reference = match r.reference {
                Some(v) => format!("{} ({})", fmt_num(v), r.reference_label),
                None => "-".to_owned(),
            };
            let ratio = r
                .ratio
                .map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
            let met = match r.met {
                Some(true) => "yes".to_owned(),
                Some(false) => "NO".to_owned(),
                None => "n/a".to_owned(),
            };
            [
                r.scenario.clone(),
                figure,
                reference,
                ratio,
                r.target_text.clone(),
                met,
            ]
        })
        .collect();
    let mut widths = head.map(str::len);
    for c in &cells {
        for (w, s) in widths.iter_mut().zip(c) {
            *w = (*w).max(s.chars().count());
        }
    }
    let line = |c: &[String]| {
        let parts: Vec<String> = c
            .iter()
            .zip(widths)
            .map(|(s, w)| format!("{s:<w$}"))
            .collect();
        format!("| {} |\n", parts.join(" | "))
    };
    let mut out = line(&head.map(str::to_owned));
    out.push_str(&format!(
        "|{}|\n",
        widths.map(|w| "-".repeat(w + 2)).join("|")
    ));
    for c in &cells {
        out.push_str(&line(c));
    }
    for r in rows {
        if let Some(miss) = &r.miss {
            out.push_str(&format!("\nMISSED  {}: {miss}", r.scenario));
        }
        for n in &r.notes {
            out.push_str(&format!("\nnote    {}: {n}", r.scenario));
        }
    }
    out.push('\n');
    out
}

/// `target/bench/report.json` under `CARGO_TARGET_DIR` when set.
pub(crate) fn report_path() -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    target.join("bench").join("report.json")
}

pub(crate) fn write_json(path: &Path, report: &Report) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(report).context("serialise the report")?;
    std::fs::write(path, json).with_context(|| format!("write {}", path.display()))
}
