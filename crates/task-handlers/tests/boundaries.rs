//! The crate's boundaries (`docs/architecture.md`, "Crates and who may depend on whom"),
//! checked on the sources.

use std::path::{Path, PathBuf};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Names of the `[dependencies]` table (not dev- or build-dependencies).
fn dependencies() -> Vec<String> {
    let manifest =
        std::fs::read_to_string(crate_dir().join("Cargo.toml")).expect("Cargo.toml reads");
    let mut in_deps = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap_or_default().trim();
            names.push(name.to_owned());
        }
    }
    names
}

fn handler_sources() -> Vec<(PathBuf, String)> {
    let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(crate_dir().join("src"))
        .expect("src lists")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains("handler") && n.ends_with(".rs"))
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("source reads");
            (p, text)
        })
        .collect();
    files.sort();
    files
}

fn name(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or_default()
}

#[test]
fn no_database_crate_in_dependencies() {
    let deps = dependencies();
    assert!(
        deps.contains(&"domain".to_owned()),
        "the parser found the table: {deps:?}"
    );
    for banned in ["sea-orm", "sea_orm", "sqlx", "store"] {
        assert!(
            !deps.iter().any(|d| d == banned),
            "`{banned}` must not be a dependency: {deps:?}"
        );
    }
}

#[test]
fn handlers_hold_no_stop_resume_logic() {
    let files = handler_sources();
    assert_eq!(
        files.len(),
        5,
        "handler.rs and the four handlers: {:?}",
        files.iter().map(|f| name(&f.0)).collect::<Vec<_>>()
    );
    for (path, text) in &files {
        for banned in [
            "stop_card",
            "start_card",
            "should_stop",
            "has_available_package",
            "resume_card",
        ] {
            assert!(!text.contains(banned), "{} mentions `{banned}`", name(path));
        }
    }
}

/// Every stop and start, the protect handler's forced corrections included, goes through
/// `stop-resume` (its lock, audit row and metrics): no handler calls the gateway's stop/start.
#[test]
fn no_handler_calls_gateway_stop_or_start() {
    for (path, text) in handler_sources() {
        let calls = text.contains(".stop(") || text.contains(".start(");
        assert!(!calls, "{} calls the gateway's stop/start", name(&path));
    }
    let protect = std::fs::read_to_string(crate_dir().join("src/polling_protect_handler.rs"))
        .expect("source reads");
    assert!(
        protect.contains("enforce_protect"),
        "the protect handler's corrections are stop-resume's"
    );
}

#[test]
fn handler_files_keep_the_seed_budgets() {
    let budgets = [
        ("polling_base.rs", 150),
        ("polling_realname_handler.rs", 200),
        ("polling_carddata_handler.rs", 300),
        ("polling_package_handler.rs", 200),
        ("polling_protect_handler.rs", 200),
    ];
    for (file, max) in budgets {
        let text =
            std::fs::read_to_string(crate_dir().join("src").join(file)).expect("source reads");
        let lines = text.lines().count();
        assert!(lines < max, "{file}: {lines} lines, budget {max}");
    }
}
