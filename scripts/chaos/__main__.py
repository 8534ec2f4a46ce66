"""`just chaos`: the fault suite. Real cmp-worker, cmp-api and gateway-sim processes against a
private PostgreSQL cluster and a private Redis server (ports 27000-27999), one fault per
scenario, the figures taken afterwards; a table on standard output and JSON under
target/chaos/. `--ci` is the short version `.ci/run` runs. The full run (no --ci, no --only)
also runs each cargo-fuzz target of fuzz/ for 60 s. Exit 1 when a scenario fails.

    python3 scripts/chaos [--ci] [--only s1,s4] [--release] [--cards N] [--fuzz-secs S]
    python3 scripts/chaos --only soak --soak-mins 30 --soak-cards 20000
    python3 scripts/chaos --bin-dir DIR ...   # prebuilt binaries (a release, a copy) instead of cargo build
"""

import argparse
import json
import os
import shutil
import signal
import sys
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from api_load import s6_api  # noqa: E402
from infra import Postgres, Procs, Redis, build  # noqa: E402
from scenarios import s1_kill, s2_redis, s3_postgres, s4_carrier, s5_skew, s7_soak  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

SCENARIOS = {
    "s1": ("1 SIGKILL workers", s1_kill),
    "s2": ("2 Redis lost", s2_redis),
    "s3": ("3 PostgreSQL restart", s3_postgres),
    "s4": ("4 carrier faults", lambda c, ci: s4_carrier(c, ci, 0)),
    "s4q": ("4 faults + quota", lambda c, ci: s4_carrier(c, ci, c.quota)),
    "s5": ("5 clock +60s", s5_skew),
    "s6": ("6 API under load", s6_api),
    "soak": ("7 soak", s7_soak),
}
DEFAULT = ["s1", "s2", "s3", "s4", "s4q", "s5", "s6"]

# Criteria the engine is known to miss today, with where the fix is being made. They still
# run, their figures are in the table, and the row says KNOWN instead of PASS; only a failure
# outside this list (or any with --strict) makes the exit code 1. Remove an entry when its
# fix lands: the suite then holds the engine to it.
KNOWN = {
    # None today. s4q's "every card polled within" and "pending_stops = 0" were listed here
    # while the settle window was a fixed 50 s that the quota's own bound (docs/decisions.md,
    # "A carrier quota below demand") exceeds on a 300-card fleet; the window is that bound now.
}


# In every scenario: none today. (The reason change without a carrier call that left a card
# out of a queue of its new config is closed: stop-resume aligns after every change.)
KNOWN_EVERYWHERE = {}


def classify(key, failures):
    """(unexpected failures, known ones with their reason)."""
    known = {**KNOWN_EVERYWHERE, **KNOWN.get(key, {})}
    unexpected, expected = [], []
    for f in failures:
        reason = next((why for prefix, why in known.items() if f.startswith(prefix)), None)
        (expected if reason else unexpected).append(f if not reason else f"{f} [{reason}]")
    return unexpected, expected


class Ctx:
    pass


def need(tool, package):
    if shutil.which(tool) is None:
        raise SystemExit(f"chaos: {tool} is required (apt-get install -y {package})")


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, list):
        return "/".join(fmt(x) for x in v)
    return str(v)


def table(results):
    cols = ["scenario", "checked", "missing", "dup calls", "wrong stops", "p99 ms",
            "RSS start MB", "RSS end MB", "s", "result"]
    rows = []
    for key, r in results.items():
        rows.append([SCENARIOS[key][0], fmt(r.get("cards_checked")), fmt(r.get("cards_missing")),
                     fmt(r.get("duplicate_calls")), fmt(r.get("wrong_stops")),
                     fmt(r.get("p99_ms")), fmt(r.get("rss_start_mb")), fmt(r.get("rss_end_mb")),
                     fmt(r.get("seconds")), r["result"]])
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    out = [line(cols), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    for key, r in results.items():
        out.append(f"{SCENARIOS[key][0]}: {r.get('fault', '')}")
        if r.get("unexpected"):
            out.append(f"    failed: {'; '.join(r['unexpected'])}")
        if r.get("known"):
            out.append(f"    known: {'; '.join(r['known'])}")
        extra = {k: v for k, v in r.items() if k in EXTRA and v is not None}
        if extra:
            out.append("    " + ", ".join(f"{k}={fmt(v)}" for k, v in extra.items()))
    return "\n".join(out)


EXTRA = ("kills", "not_polled_after_kills", "polled_more_than_bound", "poll_bound",
         "worker_ready_red", "worker_ready_green_after_s", "api_ready_red",
         "api_ready_green_after_s", "not_polled_after_restart", "backends_terminated",
         "peak_requests_per_s", "quota_cap_per_s", "not_polled_in_settle", "settle_s",
         "all_polled_after_s", "quota_rate_per_s", "carddata_wanted_per_s",
         "carddata_share_per_s", "shard_imbalance", "quota_bound_s", "settle_calls_per_s",
         "settle_bound_at_pace_s",
         "polled_before_due", "polled_twice", "never_polled", "responses_5xx", "routes_walked",
         "pending_stops", "repeated_stops", "unrecorded_changes", "db_carrier_mismatch",
         "interrupted_calls", "pending_intents", "pending_intents_before_stop",
         "intents_settle_s", "stops",
         "starts", "due_backlog_max", "due_backlog_last", "due_backlog_cap",
         "worker_rss_growth_second_half_mb", "error")


def settle(key, r, strict):
    unexpected, known = classify(key, r.get("failures", []))
    if strict:
        unexpected, known = unexpected + known, []
    r["unexpected"], r["known"] = unexpected, known
    r["ok"] = not unexpected
    r["result"] = "FAIL" if unexpected else ("KNOWN" if known else "PASS")


def main():
    ap = argparse.ArgumentParser(prog="chaos", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ci", action="store_true", help="the short version (minutes)")
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join(SCENARIOS))
    ap.add_argument("--release", action="store_true", help="release binaries")
    ap.add_argument("--cards", type=int, default=None,
                    help="fleet size of scenarios 1-4, 6 (300 with --ci, else 1000)")
    ap.add_argument("--strict", action="store_true",
                    help="known failures (KNOWN in scripts/chaos/__main__.py) fail the run too")
    ap.add_argument("--quota", type=int, default=None,
                    help="CMP_GATEWAY_RATE_LIMIT of s4q (default cards / 40: about a third of demand)")
    ap.add_argument("--soak-mins", type=int, default=30)
    ap.add_argument("--soak-cards", type=int, default=20000)
    ap.add_argument("--soak-interval", type=int, default=60, help="carddata interval of the soak")
    ap.add_argument("--fuzz-secs", type=int, default=None,
                    help="run each cargo-fuzz target this long (default 60; 0 with --ci)")
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--bin-dir", default=os.environ.get("CMP_CHAOS_BIN_DIR"),
                    help="run these gateway-sim, cmp-worker and cmp-api instead of building them "
                         "(env CMP_CHAOS_BIN_DIR)")
    args = ap.parse_args()
    if args.fuzz_secs is None:
        args.fuzz_secs = 0 if args.ci or args.only else 60
    only = [s for s in args.only.split(",") if s] or DEFAULT
    for s in only:
        if s not in SCENARIOS:
            raise SystemExit(f"chaos: --only: unknown scenario {s} (one of {', '.join(SCENARIOS)})")
    for tool, pkg in (("redis-server", "redis-server"), ("psql", "postgresql-client"),
                      ("runuser", "util-linux"), ("wrk", "wrk"), ("faketime", "faketime")):
        need(tool, pkg)

    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    outdir = os.path.join(ROOT, "target", "chaos")
    logdir = os.path.join(outdir, f"logs-{stamp}")
    os.makedirs(logdir, exist_ok=True)
    ctx = Ctx()
    ctx.cards = args.cards or (300 if args.ci else 1000)
    ctx.quota = args.quota or max(3, ctx.cards // 40)
    ctx.soak_mins, ctx.soak_cards, ctx.soak_interval = args.soak_mins, args.soak_cards, args.soak_interval
    bindir = args.bin_dir or build(ROOT, args.release, "chaos")
    for name in ("gateway-sim", "cmp-worker", "cmp-api"):
        if not os.access(os.path.join(bindir, name), os.X_OK):
            raise SystemExit(f"chaos: --bin-dir: no executable {name} in {bindir}")
    ctx.bin = lambda name: os.path.join(bindir, name)
    ctx.procs = Procs(logdir)
    ctx.pg = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = {}
    started = time.time()
    try:
        ctx.pg = Postgres(logdir)
        ctx.redis = Redis(ctx.procs)
        print(f"chaos: private PostgreSQL on :{ctx.pg.port}, Redis on :{ctx.redis.port}; "
              f"logs in {logdir}", flush=True)
        for key in only:
            name, fn = SCENARIOS[key]
            t0 = time.time()
            print(f"chaos: {name} ...", flush=True)
            try:
                r = fn(ctx, args.ci)
            except Exception as e:  # noqa: BLE001 - a scenario that breaks is a failed row
                r = {"error": f"{type(e).__name__}: {e}", "failures": ["scenario error"]}
                traceback.print_exc()
            r["seconds"] = round(time.time() - t0)
            settle(key, r, args.strict)
            results[key] = r
            print(f"chaos: {name}: {r['result']} {'; '.join(r.get('failures', []))} "
                  f"({r['seconds']}s)", flush=True)
        if args.fuzz_secs:
            from fuzz import run_fuzz
            results["fuzz"] = run_fuzz(ROOT, args.fuzz_secs)
            settle("fuzz", results["fuzz"], args.strict)
    finally:
        ctx.procs.stop_all()
        if ctx.pg is not None:
            ctx.pg.close()
    load = open("/proc/loadavg").read().split()[:3]
    report = {"started": stamp, "ci": args.ci, "release": args.release, "load_average": load,
              "seconds": round(time.time() - started), "scenarios": results}
    path = os.path.join(outdir, f"report-{stamp}.json")
    with open(path, "w") as fh:
        json.dump(report, fh, indent=2, default=str)
    shutil.copyfile(path, os.path.join(outdir, "report.json"))
    SCENARIOS["fuzz"] = ("fuzz", None)
    print()
    print(table(results))
    print(f"\nload average {' '.join(load)}; {report['seconds']}s; JSON: {path}")
    ok = all(r["ok"] for r in results.values())
    # The failures again, last: a CI log cut in the middle still shows what failed and why.
    for key, r in results.items():
        if not r["ok"]:
            print(f"chaos: FAILED {SCENARIOS[key][0]}: {'; '.join(r['unexpected'])}"
                  + (f" ({r['error']})" if r.get("error") else ""))
    if not ok:
        print(f"chaos: logs kept in {logdir}")
    if ok and not args.keep_logs:
        shutil.rmtree(logdir, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
