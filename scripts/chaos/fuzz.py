"""`--fuzz-secs S`: each cargo-fuzz target of fuzz/ for S seconds (libFuzzer on stable Rust
through RUSTC_BOOTSTRAP=1; cargo-fuzz installed from crates.io when missing). A crash is a
failed row naming the artifact."""

import os
import re
import shutil
import subprocess
import time


def run_fuzz(root, secs):
    if shutil.which("cargo-fuzz") is None:
        print("chaos: fuzz: installing cargo-fuzz from crates.io (about 1.5 min)", flush=True)
        if subprocess.run(["cargo", "install", "cargo-fuzz", "--locked"]).returncode != 0:
            return {"ok": False, "fault": "cargo-fuzz missing", "failures": [
                "cargo install cargo-fuzz --locked failed"]}
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    target_dir = env.get("CMP_FUZZ_TARGET_DIR", "/var/tmp/cmp-fuzz-target")
    fuzz_dir = os.path.join(root, "fuzz")
    listed = subprocess.run(["cargo", "fuzz", "list"], cwd=root, env=env, capture_output=True,
                            text=True, check=True).stdout.split()
    out = {"fault": f"cargo-fuzz, {secs}s per target: {', '.join(listed)}", "targets": {},
           "failures": []}
    t0 = time.time()
    for target in listed:
        corpus = os.path.join(fuzz_dir, "corpus", target)
        os.makedirs(corpus, exist_ok=True)
        seeds = os.path.join(fuzz_dir, "seeds", target)
        r = subprocess.run(["cargo", "fuzz", "run", "--target-dir", target_dir, target, corpus]
                           + ([seeds] if os.path.isdir(seeds) else [])
                           + ["--", f"-max_total_time={secs}", "-rss_limit_mb=1024"],
                           cwd=root, env=env, capture_output=True, text=True,
                           timeout=secs + 1800)
        log = r.stderr
        runs = re.findall(r"#(\d+)\s+(?:DONE|pulse|NEW|REDUCE)", log)
        crash = re.search(r"Test unit written to (\S+)", log)
        out["targets"][target] = {"exit": r.returncode, "execs": int(runs[-1]) if runs else None,
                                  "artifact": crash.group(1) if crash else None,
                                  "tail": log.strip().splitlines()[-12:]}
        if r.returncode != 0:
            out["failures"].append(f"{target}: exit {r.returncode}"
                                   + (f", crash input {crash.group(1)}" if crash else ""))
    out["seconds"] = round(time.time() - t0)
    out["ok"] = not out["failures"]
    return out
