//! Every Lua script touches exactly one key, `KEYS[1]`, so the layout runs on Redis Cluster
//! (all keys of a script must hash to one slot; one key always does).

use std::path::Path;

fn scripts() -> anyhow::Result<Vec<(String, String)>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lua");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "lua") {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            out.push((name.unwrap_or_default(), std::fs::read_to_string(&path)?));
        }
    }
    out.sort();
    Ok(out)
}

/// The code of a script without its `--` comments.
fn code(src: &str) -> String {
    src.lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_script_is_embedded_and_checked() -> anyhow::Result<()> {
    let names: Vec<String> = scripts()?.into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "claim.lua",
            "claim_due.lua",
            "compare_delete.lua",
            "compare_pexpire.lua",
            "dequeue.lua",
            "gcra.lua",
            "gcra_booked.lua",
            "gcra_throttled.lua",
            "semaphore_acquire.lua",
            "semaphore_count.lua",
            "take_due.lua"
        ]
    );
    let embedded = include_str!("../src/scripts.rs");
    for n in &names {
        assert!(
            embedded.contains(&format!("lua/{n}")),
            "{n} is not loaded by scripts.rs"
        );
    }
    Ok(())
}

#[test]
fn every_script_only_uses_keys_1() -> anyhow::Result<()> {
    for (name, src) in scripts()? {
        let code = code(&src);
        let uses: Vec<&str> = code
            .match_indices("KEYS[")
            .map(|(i, _)| &code[i..i + 7])
            .collect();
        assert!(!uses.is_empty(), "{name} names no key");
        assert!(uses.iter().all(|u| *u == "KEYS[1]"), "{name} uses {uses:?}");
        assert!(!code.contains("#KEYS"), "{name} iterates over KEYS");
        // Every redis.call names KEYS[1] as its key, or is a key-less command.
        for (i, _) in code.match_indices("redis.call(") {
            let call = &code[i + "redis.call(".len()..];
            let call = &call[..call.find(')').unwrap_or(call.len())];
            let mut args = call.split(',').map(str::trim);
            let command = args.next().unwrap_or("").trim_matches('\'');
            if command == "TIME" {
                continue;
            }
            assert_eq!(
                args.next(),
                Some("KEYS[1]"),
                "{name}: {command} on another key"
            );
        }
    }
    Ok(())
}

#[test]
fn the_rust_side_passes_exactly_one_key() {
    // scripts::eval takes a single `key: String`: no call site can pass two.
    let src = include_str!("../src/scripts.rs");
    assert!(src.contains("key: String,"));
    assert!(src.contains("evalsha_with_reload(pool.next(), key, args)"));
}
