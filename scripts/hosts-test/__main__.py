"""`just hosts-test`: the polling core deployed on several hosts of this machine, and the faults
of several hosts. Every host is a network namespace (scripts/hosts-test/net.py) on one bridge,
with addresses in 10.77.0.0/24 that exist only inside those namespaces:

    lb       HAProxy in front of api1 and api2 (checks on /readyz, drain on its runtime socket)
    api1-2   cmp-api replicas
    w1-w4    cmp-worker nodes (w4 joins in scenario 6)
    redis1-6 a Redis Cluster of three masters with a replica each
    pg       a private PostgreSQL cluster
    sim      gateway-sim (a second one with a slow carrier for scenario 6)
    ctl      this test: seeding, `cmp-worker check`, the load, the figures; also the switch

Scenarios (each ends with `cmp-worker check` and the fault suite's figures):
    1  rolling restart of both API replicas under a steady load through HAProxy
    2  a worker host's link cut for longer than the lease, then restored
    3a a worker host partitioned from Redis only; 3b from PostgreSQL only
    4  a Redis master killed: its replica promoted
    5  PostgreSQL restarted
    6  scale-out: polls/s with 1, 2, 3 worker hosts against a slow carrier, a 4th host added

Run as root (network namespaces). Installs haproxy, iproute2 and nftables from Debian when
missing. Everything it starts is stopped and every namespace removed at the end, also on a
failure, Ctrl-C, SIGTERM or the time bound (--max-mins). Exit 1 when a scenario fails.

    python3 scripts/hosts-test [--ci] [--only 1,2,3a,3b,4,5,6] [--release] [--cards N] [--bin-dir DIR]
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "scripts", "chaos"))

import net  # noqa: E402

ORDER = ["1", "2", "4", "5", "3a", "3b", "6"]
HOSTS = list(net.ADDRS)


class Ctx:
    pass


class TimeBound(Exception):
    pass


def need_packages():
    """Debian packages this test needs, installed when their command is missing."""
    want = {"haproxy": "haproxy", "ip": "iproute2", "nft": "nftables",
            "redis-server": "redis-server", "psql": "postgresql-client", "runuser": "util-linux"}
    missing = sorted({pkg for cmd, pkg in want.items() if shutil.which(cmd) is None})
    if not glob_pg():
        missing.append("postgresql")
    if missing:
        print(f"hosts-test: installing {' '.join(missing)}", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=600,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env,
                       timeout=900, stdout=subprocess.DEVNULL)


def glob_pg():
    import glob
    return glob.glob("/usr/lib/postgresql/*/bin/initdb")


def fmt(v):
    if v is None:
        return "-"
    return str(v)


COLS = [("scenario", "name"), ("checked", "cards_checked"), ("missing", "cards_missing"),
        ("dup stop/start calls", "duplicate_calls"), ("wrong stops", "wrong_stops"),
        ("failed API requests", "api_failed"), ("recovery s", "recovery_s"), ("s", "seconds"),
        ("result", "result")]
SKIP = {"name", "fault", "failures", "result", "seconds", "check_output", "check_examples",
        "check_findings", "duplicate_examples", "decision_examples", "rss_end_mb",
        "worker_exit_codes", "cards_checked", "cards_missing", "duplicate_calls", "wrong_stops",
        "api_failed", "recovery_s", "p99_ms", "intents_settle_s", "repeated_stop_examples",
        "check_exit", "pending_stops_in_flight"}


def table(results):
    rows = [[fmt(r.get(k)) for _, k in COLS] for r in results]
    widths = [max(len(c), *(len(x[i]) for x in rows)) if rows else len(c)
              for i, (c, _) in enumerate(COLS)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    out = [line([c for c, _ in COLS]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(x) for x in rows]
    for r in results:
        out.append(f"{r.get('name')}: {r.get('fault', '')}")
        if r.get("failures"):
            out.append(f"    failed: {'; '.join(r['failures'])}")
        rates = [r.get(f"polls_per_s_{n}_hosts") for n in (1, 2, 3)]
        if all(x is not None for x in rates):
            out.append(f"    polls/s with 1, 2, 3 worker hosts: {' / '.join(map(str, rates))}; "
                       f"1 -> 3 hosts {r.get('speedup_1_to_3')}x, gated {r.get('speedup_gate')}")
        extra = {k: v for k, v in r.items() if k not in SKIP and v is not None}
        if extra:
            out.append("    " + ", ".join(f"{k}={v}" for k, v in extra.items()))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(prog="hosts-test", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ci", action="store_true",
                    help="the short version CI runs: smaller fleets, the same criteria but the "
                         "scale-out ratio, gated at 2.0x instead of 2.7x")
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join(ORDER))
    ap.add_argument("--cards", type=int, default=None, help="fleet of scenarios 1-5 (300 with --ci, else 600)")
    ap.add_argument("--scale-cards", type=int, default=None, help="fleet of scenario 6 (1500 with --ci, else 5000)")
    ap.add_argument("--latency-ms", type=int, default=None,
                    help="the slow carrier's latency in scenario 6 (200; 500 with --ci, whose "
                         "debug binaries on a shared machine must not make it a CPU test)")
    ap.add_argument("--lease", type=int, default=15, help="CMP_LEASE_SECS of scenarios 1-5")
    ap.add_argument("--max-mins", type=int, default=None, help="time bound (20 with --ci, else 45)")
    ap.add_argument("--release", action="store_true", help="release binaries (default: debug, as CI builds them)")
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--bin-dir", default=os.environ.get("CMP_HOSTS_BIN_DIR"),
                    help="prebuilt gateway-sim, cmp-worker, cmp-api (else cargo build)")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s] or ORDER
    for s in only:
        if s not in ORDER:
            raise SystemExit(f"hosts-test: --only: unknown scenario {s} (one of {', '.join(ORDER)})")
    if os.geteuid() != 0:
        raise SystemExit("hosts-test: needs root (network namespaces)")
    need_packages()
    from infra import build
    bindir = args.bin_dir or build(ROOT, args.release, "hosts-test")
    for name in ("gateway-sim", "cmp-worker", "cmp-api"):
        if not os.access(os.path.join(bindir, name), os.X_OK):
            raise SystemExit(f"hosts-test: no executable {name} in {bindir}")

    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    outdir = os.path.join(ROOT, "target", "hosts-test")
    logdir = os.path.join(outdir, f"logs-{stamp}")
    os.makedirs(logdir, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="cmp-hosts.")
    os.chmod(workdir, 0o755)

    from infra import Procs
    ctx = Ctx()
    ctx.bin = lambda name: os.path.join(bindir, name)
    ctx.procs = Procs(logdir)
    ctx.pg = None
    ctx.lease = args.lease
    ctx.cards = args.cards or (300 if args.ci else 600)
    ctx.scale_cards = args.scale_cards or (1500 if args.ci else 5000)
    args.latency_ms = args.latency_ms or (500 if args.ci else 200)
    ctx.scale_latency_ms = args.latency_ms
    max_mins = args.max_mins or (20 if args.ci else 45)

    def on_alarm(*_):
        raise TimeBound(f"time bound of {max_mins} min reached")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max_mins * 60)
    results = []
    started = time.time()
    try:
        net.setup(HOSTS)
        net.enter("ctl")
        import cases
        from hosts import HAProxy, HostWorld, RedisCluster, postgres
        from infra import Http, wait_until
        ctx.pg = postgres(logdir)
        ctx.redis = RedisCluster(ctx.procs, workdir)
        ctx.lb = HAProxy(ctx.procs, workdir)
        sim_ip = net.ip_of("sim")
        for port, extra in ((7070, []), (7071, ["--latency-ms", str(args.latency_ms)])):
            ctx.procs.spawn(f"gateway-sim-{port}", [ctx.bin("gateway-sim"), "serve", "--bind",
                            f"{sim_ip}:{port}", "--hang-ms", "3000", *extra], wrap=net.exec_in("sim"))
            wait_until("gateway-sim", lambda p=port: Http(f"{sim_ip}:{p}").status("/sim/stats") == 200, 30)
        ctx.sim, ctx.slow_sim = f"{sim_ip}:7070", f"{sim_ip}:7071"
        print(f"hosts-test: {len(HOSTS)} hosts up (10.77.0.0/24 in namespaces {net.PREFIX}*), "
              f"Redis Cluster {', '.join(ctx.redis.masters())} masters; logs in {logdir}", flush=True)

        fns = {"1": cases.s1_rolling, "2": cases.s2_cut, "3a": cases.s3_redis,
               "3b": cases.s3_postgres, "4": cases.s4_master, "5": cases.s5_postgres}
        shared = [s for s in ORDER if s in only and s in fns]
        if shared:
            w = HostWorld(ctx, "main", cards=ctx.cards, interval=10, sim=ctx.sim)
            try:
                w.start_apis()
                for key in shared:
                    t0 = time.time()
                    print(f"hosts-test: scenario {key} ...", flush=True)
                    try:
                        cases.start_workers(w)
                        r = fns[key](ctx, w, args.ci)
                    except TimeBound:
                        raise
                    except Exception as e:  # noqa: BLE001 - a scenario that breaks is a failed row
                        traceback.print_exc()
                        r = {"name": key, "failures": [f"scenario error: {type(e).__name__}: {e}"]}
                        w.stop_workers()
                        net.heal("w1")
                        net.restore("w1")
                    r["seconds"] = round(time.time() - t0)
                    r["result"] = "FAIL" if r.get("failures") else "PASS"
                    results.append(r)
                    print(f"hosts-test: {r['name']}: {r['result']} {'; '.join(r.get('failures', []))} "
                          f"({r['seconds']}s)", flush=True)
            finally:
                w.close()
        if "6" in only:
            t0 = time.time()
            print("hosts-test: scenario 6 ...", flush=True)
            try:
                r = cases.s6_scale(ctx, args.ci)
            except TimeBound:
                raise
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                r = {"name": "6 scale-out", "failures": [f"scenario error: {type(e).__name__}: {e}"]}
            r["seconds"] = round(time.time() - t0)
            r["result"] = "FAIL" if r.get("failures") else "PASS"
            results.append(r)
            print(f"hosts-test: {r['name']}: {r['result']} {'; '.join(r.get('failures', []))} "
                  f"({r['seconds']}s)", flush=True)
    except TimeBound as e:
        results.append({"name": "time bound", "failures": [str(e)], "result": "FAIL"})
    finally:
        signal.alarm(0)
        ctx.procs.stop_all()
        if ctx.pg is not None:
            ctx.pg.close()
        net.teardown()
        shutil.rmtree(workdir, ignore_errors=True)
    load = open("/proc/loadavg").read().split()[:3]
    report = {"started": stamp, "ci": args.ci, "load_average": load,
              "seconds": round(time.time() - started), "scenarios": results}
    path = os.path.join(outdir, f"report-{stamp}.json")
    with open(path, "w") as fh:
        json.dump(report, fh, indent=2, default=str)
    shutil.copyfile(path, os.path.join(outdir, "report.json"))
    print()
    print(table(results))
    print(f"\nload average {' '.join(load)}; {report['seconds']}s; JSON: {path}")
    ok = bool(results) and all(r["result"] == "PASS" for r in results)
    if ok and not args.keep_logs:
        shutil.rmtree(logdir, ignore_errors=True)
    passed = sum(r["result"] == "PASS" for r in results)
    print(f"hosts-test: {passed} passed, {len(results) - passed} failed")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
