"""Scenario 6: cmp-api under load (wrk) and its key and role checks on every route.

wrk runs a list route and a write route, each with a valid and an invalid key; a Lua script
counts the answers by status. Afterwards every route of /api/openapi.json is called without a
key (401 expected) and every non-GET route with a viewer key (403 expected).
"""

import os
import re
import subprocess
import time

from fleet import World, rss_mb
from infra import wait_until

LUA = r"""
wrk.method = "%(method)s"
wrk.body = %(body)s
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %(key)s"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) codes = {} end
function response(status, headers, body) codes[status] = (codes[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("codes")) do total[k] = (total[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(total) do table.insert(parts, string.format("%%d=%%d", k, v)) end
  io.write("CODES " .. table.concat(parts, " ") .. "\n")
  io.write(string.format("P99US %%d\n", latency:percentile(99)))
  io.write(string.format("ERRORS %%d %%d %%d %%d\n", summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.timeout))
end
"""


def wrk(w, logdir, name, method, path, key, body, secs, conns=16):
    script = os.path.join(logdir, f"wrk-{name}.lua")
    lua_body = "nil" if body is None else '"' + body.replace('"', '\\"') + '"'
    with open(script, "w") as fh:
        fh.write(LUA % {"method": method, "body": lua_body, "key": key})
    r = subprocess.run(["wrk", "-t2", f"-c{conns}", f"-d{secs}s", "--timeout", "10s", "-s", script,
                        f"http://{w.api_addr}{path}"], capture_output=True, text=True,
                       timeout=secs + 60)
    out = r.stdout
    codes = {}
    m = re.search(r"^CODES (.*)$", out, re.M)
    if m:
        for kv in m.group(1).split():
            k, v = kv.split("=")
            codes[int(k)] = int(v)
    p99 = re.search(r"^P99US (\d+)", out, re.M)
    errs = re.search(r"^ERRORS (\d+) (\d+) (\d+) (\d+)", out, re.M)
    rps = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    return {"route": f"{method} {path}", "codes": codes,
            "p99_ms": round(int(p99.group(1)) / 1000, 1) if p99 else None,
            "socket_errors": sum(int(x) for x in errs.groups()) if errs else None,
            "rps": float(rps.group(1)) if rps else None}


def walk(w):
    """401 without a key on every route; 403 for a viewer on every write."""
    st, doc = w.api.call("GET", "/api/openapi.json", key="")
    if st != 200:
        raise RuntimeError(f"openapi.json: {st}")
    fill = {"id": "1", "card_id": "1", "task_type": "carddata", "asset_type": "card"}
    wrong = []
    routes = 0
    for path, ops in doc["paths"].items():
        concrete = re.sub(r"\{(\w+)\}", lambda m: fill.get(m.group(1), "1"), path)
        if not concrete.startswith("/api/admin"):
            continue
        for method in ops:
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            routes += 1
            body = None if method in ("get", "delete") else {}
            st, _ = w.api.call(method.upper(), concrete, body, key="")
            if st != 401:
                wrong.append(f"{method.upper()} {path} without key: {st}")
            if method != "get":
                st, _ = w.api.call(method.upper(), concrete, body, key=w.viewer)
                if st != 403:
                    wrong.append(f"{method.upper()} {path} as viewer: {st}")
    return routes, wrong


def s6_api(ctx, ci):
    secs = 10 if ci else 30
    w = World(ctx, "s6", cards=ctx.cards, interval=10)
    try:
        w.spawn_api()
        a = w.spawn_worker("a")
        w.wait_ready(a)
        logdir = ctx.procs.logdir
        f = {"fault": f"wrk {secs}s per run: list and write routes, valid and invalid keys"}
        list_path = "/api/admin/cards?page=2&page_size=50&network_status=1"
        write_path = "/api/admin/polling-manual-trigger/single"
        body = '{"card_id": 7, "task_types": ["carddata"]}'
        # Warm-up, then the resident size everything after is compared with.
        wrk(w, logdir, "warm", "GET", list_path, w.viewer, None, 3)
        f["rss_start_mb"] = [rss_mb(w.api_proc)]
        runs = [
            wrk(w, logdir, "list-valid", "GET", list_path, w.viewer, None, secs),
            wrk(w, logdir, "list-badkey", "GET", list_path, "cmp_not_a_key", None, secs),
            wrk(w, logdir, "write-valid", "POST", write_path, w.operator, body, secs),
            wrk(w, logdir, "write-badkey", "POST", write_path, "cmp_not_a_key", body, secs),
            wrk(w, logdir, "write-viewer", "POST", write_path, w.viewer, body, secs),
        ]
        time.sleep(2)
        f["rss_end_mb"] = [rss_mb(w.api_proc)]
        f["wrk"] = runs
        f["p99_ms"] = max((r["p99_ms"] or 0) for r in runs)
        fails = f.setdefault("failures", [])
        five = sum(n for r in runs for c, n in r["codes"].items() if c >= 500)
        f["responses_5xx"] = five
        if five:
            fails.append("no 5xx under load")
        expected = [(200,), (401,), (200,), (401,), (403,)]
        for r, want in zip(runs, expected):
            other = {c: n for c, n in r["codes"].items() if c not in want}
            if other or not r["codes"]:
                fails.append(f"{r['route']}: only {want} expected, got {r['codes']}")
            if r["socket_errors"]:
                fails.append(f"{r['route']}: {r['socket_errors']} socket errors/timeouts")
        grow = (f["rss_end_mb"][0] or 0) - (f["rss_start_mb"][0] or 0)
        f["api_rss_growth_mb"] = round(grow, 1)
        if grow > max(24, 0.3 * (f["rss_start_mb"][0] or 0)):
            fails.append("API RSS flat (growth <= max(24 MB, 30%))")
        routes, wrong = walk(w)
        f["routes_walked"] = routes
        f["auth_violations"] = wrong[:10]
        if wrong:
            fails.append(f"{len(wrong)} routes not 401 without key / 403 for viewer")
        wait_until("api still ready", lambda: w.api.status("/readyz") == 200, 10)
        # The cards figures of the common criteria (the worker polled during the load).
        from scenarios import finish
        finish(w, f, skip=("pending_stops",))
        return f
    finally:
        w.close()
