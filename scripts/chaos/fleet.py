"""A scenario's world: its own database on the private cluster, the private Redis, its own
gateway-sim, a seeded fleet with short intervals, and the real binaries started against them;
then the figures taken afterwards from `cmp-worker check`, the simulator's per-card counters,
`tb_card_state_log` and the API's explain (the decision table on the database's facts)."""

import os
import re
import signal
import subprocess
import time

from infra import Http, free_port, rss_kb, wait_until

TASKS = ("realname", "carddata", "package", "protect")
# A tenth of the cards burn through their package in a few polls (the sim's usage grows by
# this many MB a query), so stops happen during the run.
FAST_GROWTH_MB = 300


class World:
    def __init__(self, ctx, name, cards, interval, sim_args=()):
        self.ctx, self.name, self.cards, self.interval = ctx, name, cards, interval
        self.db = f"chaos_{name}_{os.getpid()}"
        ctx.pg.sql("postgres", f"CREATE DATABASE {self.db}")
        ctx.redis.cmd("FLUSHALL")  # the private instance: nothing else lives there
        self.sim_addr = f"127.0.0.1:{free_port()}"
        self.sim_proc = ctx.procs.spawn(f"{name}-gateway-sim", [
            ctx.bin("gateway-sim"), "serve", "--bind", self.sim_addr, "--hang-ms", "3000",
            *sim_args])
        self.sim = Http(self.sim_addr)
        wait_until("gateway-sim", lambda: self.sim.status("/sim/stats") == 200, 30)
        self.workers = []
        self.api_proc = None
        self.api_addr = None
        self.seed()

    def seed(self, intervals=None, fast=True):
        """The schema and the fleet seeded against this world's simulator; the polling
        intervals (seconds by task, else `short_intervals`); with `fast`, every tenth card
        made one whose package runs out in a few polls."""
        self.run(["migrate"])
        self.run(["seed", "--cards", str(self.cards), "--gateway-url", f"http://{self.sim_addr}"])
        self.set_intervals(intervals or self.short_intervals(self.interval))
        self.fast = []
        for i in range(0, self.cards, 10) if fast else ():
            iccid = f"8986{i:016d}"
            st, _ = self.sim.call("PATCH", f"/sim/cards/{iccid}",
                                  {"growth_mb_per_query": FAST_GROWTH_MB})
            if st != 200:
                raise RuntimeError(f"PATCH /sim/cards/{iccid}: {st}")
            self.fast.append(iccid)

    # The process settings a subclass changes.
    LOG_VAR = "CMP_CHAOS_LOG"

    def lease_secs(self):
        return max(10, self.interval * 2)

    def env(self, extra=None):
        e = dict(os.environ)
        e.update({
            "CMP_DATABASE_URL": self.ctx.pg.url(self.db),
            "CMP_DATABASE_MAX_CONNECTIONS": "8",
            "CMP_REDIS_URL": self.ctx.redis.url,
            "CMP_GATEWAY_URL": f"http://{self.sim_addr}",
            "CMP_SCHEDULER_TICK_MS": "200",
            "CMP_RETRY_INTERVAL_SECS": str(max(2, self.interval // 2)),
            "CMP_LEASE_SECS": str(self.lease_secs()),
            "CMP_GATEWAY_TIMEOUT_MS": "1000",
            "CMP_LOG": os.environ.get(self.LOG_VAR, "warn"),
            "CMP_LOG_FORMAT": "pretty",
        })
        e.update(extra or {})
        return e

    def run(self, args, extra=None, timeout=300):
        """Runs `cmp-worker ARGS` to the end: (exit code, stdout)."""
        r = subprocess.run([self.ctx.bin("cmp-worker"), *args], env=self.env(extra),
                           capture_output=True, text=True, timeout=timeout)
        if args[0] in ("migrate", "seed", "init") and r.returncode != 0:
            raise RuntimeError(f"cmp-worker {' '.join(args)}: {r.returncode}\n{r.stderr[-2000:]}")
        return r.returncode, r.stdout

    @staticmethod
    def short_intervals(base):
        """Seconds instead of minutes: carddata every `base`, the other types every 2 x base."""
        return {"realname": base * 2, "carddata": base, "package": base * 2, "protect": base * 2}

    def set_intervals(self, intervals):
        """Every polling config's interval of each task (seconds); a task a config leaves
        unpolled (NULL) stays so."""
        sets = ", ".join(f"{t}_interval_secs = CASE WHEN {t}_interval_secs IS NULL THEN NULL "
                         f"ELSE {v} END" for t, v in intervals.items())
        self.ctx.pg.sql(self.db, f"UPDATE tb_polling_config SET {sets}")

    def spawn_worker(self, tag, extra=None, wrap=None):
        addr = f"127.0.0.1:{free_port()}"
        env = self.env({"CMP_WORKER_BIND": addr, **(extra or {})})
        p = self.ctx.procs.spawn(f"{self.name}-worker-{tag}", [self.ctx.bin("cmp-worker"), "run"],
                                 env=env, wrap=wrap)
        p.addr = addr
        p.http = Http(addr, timeout=5)
        self.workers.append(p)
        return p

    def spawn_api(self):
        self.api_addr = f"127.0.0.1:{free_port()}"
        self.api_proc = self.ctx.procs.spawn(f"{self.name}-api", [self.ctx.bin("cmp-api"), "serve"],
                                             env=self.env({"CMP_API_BIND": self.api_addr}))
        self.api = Http(self.api_addr, timeout=30)
        wait_until("cmp-api /readyz", lambda: self.api.status("/readyz") == 200, 60)
        self.viewer = self.key("chaos-viewer", "viewer")
        self.operator = self.key("chaos-operator", "operator")
        self.admin = self.key("chaos-admin", "admin")
        self.api.key = self.viewer
        return self.api_proc

    def key(self, name, role):
        r = subprocess.run([self.ctx.bin("cmp-api"), "keys", "create", "--name", name,
                            "--role", role], env=self.env(), capture_output=True, text=True,
                           timeout=60, check=True)
        return r.stdout.strip().splitlines()[-1]

    def wait_ready(self, worker, within=120):
        wait_until("cmp-worker /readyz", lambda: worker.http.status("/readyz") == 200, within)

    def stop_workers(self):
        codes = [self.ctx.procs.stop(w, signal.SIGTERM, within=45) for w in self.workers]
        self.workers = []
        return codes

    def close(self):
        self.stop_workers()
        if self.api_proc is not None:
            self.ctx.procs.stop(self.api_proc)
        self.ctx.procs.stop(self.sim_proc)
        try:
            self.ctx.pg.sql("postgres", f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
        except subprocess.CalledProcessError:
            pass

    # ---- figures ----

    def sim_cards(self):
        """iccid -> the simulator's view of the card (counters included)."""
        out = {}
        for (iccid,) in self.ctx.pg.sql(self.db, "SELECT iccid FROM tb_iot_card ORDER BY id"):
            st, body = self.sim.call("GET", f"/sim/cards/{iccid}")
            if st == 200:
                out[iccid] = body
        return out

    def sim_stats(self):
        return self.sim.call("GET", "/sim/stats")[1]

    def check(self):
        """`cmp-worker check`: exit code, cards checked and the count of each finding."""
        code, out = self.run(["check"], timeout=300)
        m = re.search(r"checked (\d+) polling-enabled cards", out)
        found = {k: 0 for k in ("missing", "unscheduled", "not_live", "wrong_shard")}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] in found and parts[1].isdigit():
                found[parts[0]] = int(parts[1])
        named = re.findall(r"e\.g\. (\d+)/(\w+)", out)
        return {"check_exit": code, "cards_checked": int(m.group(1)) if m else 0,
                "check_examples": [self.card_story(int(c), t) for c, t in named[:3]],
                "cards_missing": found["missing"], "check_findings": found,
                "check_output": out.strip().splitlines()[-6:]}

    def card_story(self, card_id, task=None):
        """What the database and the queues say about one card (for a failed criterion)."""
        row = self.ctx.pg.sql(self.db, f"""
            SELECT c.network_status, c.stop_reason, c.real_name_status, c.card_category,
                   c.device_id, c.enable_polling FROM tb_iot_card c WHERE c.id = {card_id}""")
        log = self.ctx.pg.sql(self.db, f"""
            SELECT id, from_status, to_status, stop_reason, trigger, gateway_outcome,
                   to_char(created_at, 'HH24:MI:SS.MS') FROM tb_card_state_log
            WHERE iot_card_id = {card_id} ORDER BY id""")
        shard = card_id % 16
        scores = {t: self.ctx.redis.cmd("ZSCORE", f"polling:shard:{shard}:queue:{t}", card_id)
                  for t in TASKS}
        return {"card": card_id, "task": task, "card_row": row, "state_log": log,
                "scores": scores}

    def calls_figures(self, sims):
        """Duplicate and unrecorded carrier changes, and carrier/database disagreement.

        A stop or start is a state-log row written `pending` before the carrier is asked and
        turned `ok` (the carrier's yes), `failed` (no yes) or `interrupted` (its holder died or
        gave up with the call in flight: it may or may not have reached the carrier) after.
        The carrier applies at most one change per row that made a call, so:
        duplicate: stops or starts the carrier applied beyond the card's `ok` + `interrupted`
        rows; unrecorded: `ok` rows the carrier never applied (a row noted
        `:already_at_carrier` applied nothing: the carrier refused, its status read showed the
        change made; such rows count on neither side); mismatch: cards whose network
        status differs between database and carrier (taken with the workers stopped, after
        the intents in flight were settled); pending: `pending` rows left (none once settled)."""
        rows = self.ctx.pg.sql(self.db, """
            SELECT c.iccid, c.network_status,
                   count(l.id) FILTER (WHERE l.gateway_outcome IN ('ok', 'interrupted')
                                       AND l.to_status = 0 AND NOT l.already),
                   count(l.id) FILTER (WHERE l.gateway_outcome IN ('ok', 'interrupted')
                                       AND l.to_status = 1 AND NOT l.already),
                   count(l.id) FILTER (WHERE l.gateway_outcome = 'ok' AND l.to_status = 0
                                       AND NOT l.already),
                   count(l.id) FILTER (WHERE l.gateway_outcome = 'ok' AND l.to_status = 1
                                       AND NOT l.already),
                   count(l.id) FILTER (WHERE l.gateway_outcome = 'pending')
            FROM tb_iot_card c
            LEFT JOIN (SELECT *, trigger LIKE '%:already_at_carrier' AS already
                       FROM tb_card_state_log) l ON l.iot_card_id = c.id
            GROUP BY c.id, c.iccid, c.network_status""")
        dup = unrec = mismatch = stops = starts = pending = interrupted = 0
        examples = []
        for iccid, net, called_stops, called_starts, ok_stops, ok_starts, left in rows:
            s = sims.get(iccid)
            if s is None:
                continue
            applied_stop, applied_start = s["stops_applied"], s["starts_applied"]
            extra = max(0, applied_stop - int(called_stops)) + max(0, applied_start - int(called_starts))
            if extra and len(examples) < 10:
                examples.append({"iccid": iccid, "db_network_status": int(net),
                                 "sim": s["network_status"], "stops_applied": applied_stop,
                                 "stop_rows": int(called_stops), "starts_applied": applied_start,
                                 "start_rows": int(called_starts), "stop_calls": s["stop_calls"],
                                 "start_calls": s["start_calls"]})
            dup += extra
            unrec += max(0, int(ok_stops) - applied_stop) + max(0, int(ok_starts) - applied_start)
            interrupted += int(called_stops) + int(called_starts) - int(ok_stops) - int(ok_starts)
            pending += int(left)
            stops += applied_stop
            starts += applied_start
            sim_net = 1 if s["network_status"] in (1, "online", "Online") else 0
            if sim_net != int(net):
                mismatch += 1
        return {"duplicate_calls": dup, "unrecorded_changes": unrec,
                "db_carrier_mismatch": mismatch, "stops": stops, "starts": starts,
                "interrupted_calls": interrupted, "pending_intents": pending,
                "duplicate_examples": examples}

    def pending_intents(self):
        """`pending` state-log rows: stops and starts whose carrier call is in flight, or whose
        holder died and which the card's next evaluation has not settled yet."""
        return int(self.ctx.pg.sql(self.db, """
            SELECT count(*) FROM tb_card_state_log WHERE gateway_outcome = 'pending'""")[0][0])

    def decision_figures(self, stopped_at=None):
        """The decision table on the database's facts, card by card (`GET /cards/{id}/explain`),
        over the cards automation polls (polling on for the card and its device; a card
        switched off is the operator's): wrong_stops = cards stopped by automation that it
        would start; pending_stops = online cards it would stop on facts older than one
        carddata interval + a retry interval + 10 s before the workers were stopped
        (`stopped_at`, epoch seconds). A stop whose facts are younger may be the poll the
        shutdown cut short (its usage written, its evaluation handed back due now); those are
        counted apart as pending_stops_in_flight."""
        wrong = pending = in_flight = 0
        examples = []
        bound = self.interval + max(2, self.interval // 2) + 10
        rows = self.ctx.pg.sql(self.db, """
            SELECT c.id, extract(epoch FROM greatest(c.updated_at,
                     (SELECT max(p.updated_at) FROM tb_package_usage p
                      WHERE p.iot_card_id = c.id OR (c.device_id IS NOT NULL AND p.device_id = c.device_id))))
            FROM tb_iot_card c
            WHERE c.deleted_at IS NULL AND c.enable_polling
              AND (c.device_id IS NULL OR NOT EXISTS (
                    SELECT 1 FROM tb_device d
                    WHERE d.id = c.device_id AND d.deleted_at IS NULL AND NOT d.enable_polling))""")
        for cid, facts_at in rows:
            st, body = self.api.call("GET", f"/api/admin/cards/{cid}/explain")
            if st != 200:
                raise RuntimeError(f"explain {cid}: {st} {body}")
            d = body["decision"]
            if d["action"] == "start" and not d.get("manual_stop"):
                wrong += 1
                examples.append(f"{cid}:start")
            elif d["action"] == "stop":
                fresh = stopped_at is not None and float(facts_at or 0) > stopped_at - bound
                if fresh:
                    in_flight += 1
                else:
                    pending += 1
                examples.append(f"{cid}:stop/{d.get('reason')}" + (" (in flight)" if fresh else ""))
            if d["action"] in ("start", "stop") and len(examples) <= 3:
                examples.append({"card": cid, "summary": body.get("summary"),
                                 "next_due": body.get("next_due"),
                                 "recent_changes": body.get("recent_changes", [])[:3]})
        return {"wrong_stops": wrong, "pending_stops": pending,
                "pending_stops_in_flight": in_flight, "decision_examples": examples[:8]}

    def repeated_stops(self):
        """Cards stopped twice for the same reason with no start in between."""
        rows = self.ctx.pg.sql(self.db, """
            SELECT count(*) FROM (
              SELECT iot_card_id, to_status, lag(to_status) OVER w AS prev
              FROM tb_card_state_log WHERE gateway_outcome = 'ok'
              WINDOW w AS (PARTITION BY iot_card_id ORDER BY id)) x
            WHERE to_status = 0 AND prev = 0""")
        return int(rows[0][0])


def p99_from_metrics(text, metric="cmp_task_duration_seconds"):
    """p99 in ms (upper bucket bound) of a Prometheus histogram, over every label set."""
    buckets = {}
    for line in text.splitlines():
        if line.startswith(f"{metric}_bucket"):
            m = re.search(r'le="([^"]+)"\}\s+([0-9.e+]+)', line)
            if m:
                le = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
                buckets[le] = buckets.get(le, 0) + float(m.group(2))
    if not buckets or buckets.get(float("inf"), 0) == 0:
        return None
    total = buckets[float("inf")]
    for le in sorted(buckets):
        if buckets[le] >= 0.99 * total:
            return None if le == float("inf") else round(le * 1000, 1)
    return None


def worker_p99(worker):
    try:
        st, text = worker.http.call("GET", "/metrics")
    except OSError:
        return None
    return p99_from_metrics(text) if st == 200 and isinstance(text, str) else None


def rss_mb(proc):
    kb = rss_kb(proc.pid)
    return None if kb is None else round(kb / 1024, 1)


def usage_queries(sims):
    return {i: s["usage_queries"] for i, s in sims.items()}


def sleep_until(t):
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)
