"""What runs on the hosts: a private PostgreSQL cluster on `pg`, a Redis Cluster of three
masters with a replica each on `redis1`-`redis6`, HAProxy on `lb`, `gateway-sim` on `sim`, the
API replicas and the worker nodes; and a world (a database with its seeded fleet) for the
scenarios, whose figures are taken as the fault suite takes them (scripts/chaos/fleet.py)."""

import os
import signal
import socket
import subprocess
import time

import net
from fleet import World
from infra import Http, Postgres, resp_call, wait_until

REDIS_HOSTS = ["redis1", "redis2", "redis3", "redis4", "redis5", "redis6"]
SHARDS = 16
TASKS = ("realname", "carddata", "package", "protect")


def resp(addr, commands, timeout=5):
    """RESP commands on one connection to host:port; one reply (or error, returned) each."""
    host, port = addr.rsplit(":", 1)
    return resp_call(int(port), commands, host=host, timeout=timeout, errors=True)


class RedisCluster:
    """Six redis-server processes, one per host, made a cluster of three masters and three
    replicas; no persistence (as scripts/redis-cluster.sh runs them)."""

    def __init__(self, procs, workdir):
        self.procs, self.dir = procs, workdir
        self.proc = {}
        for h in REDIS_HOSTS:
            os.makedirs(os.path.join(workdir, h), exist_ok=True)
            self.launch(h)
        for h in REDIS_HOSTS:
            wait_until(f"redis on {h}", lambda h=h: self.on(h, "PING") == "PONG", 20)
        addrs = [self.addr(h) for h in REDIS_HOSTS]
        r = subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-replicas", "1",
                            "--cluster-yes"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create: {r.stdout[-1500:]} {r.stderr[-500:]}")
        self.wait_healthy(30)
        self.url = f"redis-cluster://{addrs[0]}?" + "&".join(f"node={a}" for a in addrs[1:])

    @staticmethod
    def addr(host):
        return f"{net.ip_of(host)}:6379"

    def launch(self, h):
        d = os.path.join(self.dir, h)
        self.proc[h] = self.procs.spawn(f"redis-{h}", [
            "redis-server", "--port", "6379", "--bind", net.ip_of(h), "--dir", d,
            "--cluster-enabled", "yes", "--cluster-config-file", os.path.join(d, "nodes.conf"),
            "--cluster-node-timeout", "2000", "--cluster-replica-validity-factor", "0",
            "--repl-diskless-sync-delay", "0", "--save", "", "--appendonly", "no",
            "--protected-mode", "no"], wrap=net.exec_in(h))

    def on(self, host, *args):
        r = resp(self.addr(host), [list(args)])[0]
        if isinstance(r, Exception):
            raise r
        return r

    def nodes(self, via=None):
        """[(host, role, master host or None, slots?)] from CLUSTER NODES of a live node."""
        by_ip = {net.ip_of(h): h for h in REDIS_HOSTS}
        for h in ([via] if via else []) + REDIS_HOSTS:
            try:
                text = self.on(h, "CLUSTER", "NODES")
                break
            except (OSError, RuntimeError):
                continue
        else:
            raise RuntimeError("no Redis node answers")
        ids, rows = {}, []
        for line in text.splitlines():
            p = line.split()
            ip = p[1].split(":")[0]
            ids[p[0]] = by_ip.get(ip)
            rows.append(p)
        out = []
        for p in rows:
            flags = p[2].split(",")
            role = "master" if "master" in flags else "replica"
            failed = "fail" in flags or "fail?" in flags
            out.append({"host": ids[p[0]], "role": role, "failed": failed,
                        "master": ids.get(p[3]) if p[3] != "-" else None,
                        "slots": len(p) > 8})
        return out

    def masters(self):
        return [n["host"] for n in self.nodes() if n["role"] == "master" and not n["failed"]
                and n["slots"]]

    def healthy(self, hosts=None):
        for h in hosts or [h for h in REDIS_HOSTS if self.proc[h].poll() is None]:
            info = self.on(h, "CLUSTER", "INFO")
            if "cluster_state:ok" not in info:
                return False
        return True

    def synced(self):
        for h in REDIS_HOSTS:
            info = self.on(h, "INFO", "replication")
            if "role:master" in info and any(
                    line.startswith("slave") and "state=online" not in line
                    for line in info.splitlines()):
                return False
        return True

    def wait_healthy(self, within):
        wait_until("redis cluster_state:ok, replicas in sync",
                   lambda: self.healthy() and self.synced() and len(self.masters()) == 3, within)

    def kill(self, h):
        self.procs.stop(self.proc[h], signal.SIGKILL)

    def cmd(self, *args):
        """One keyed command, sent to the master of its key's slot (MOVED followed)."""
        target = self.addr(self.masters()[0])
        for _ in range(5):
            r = resp(target, [list(args)])[0]
            if isinstance(r, Exception) and str(r).startswith("MOVED"):
                target = str(r).split()[2]
                continue
            if isinstance(r, Exception):
                raise r
            return r
        raise RuntimeError(f"redis: too many redirections for {args[:2]}")

    def flushall(self):
        for h in self.masters():
            self.on(h, "FLUSHALL")

    def set_scores(self, task, score):
        """Every member of the `task` queues to `score` (XX: existing members only)."""
        for s in range(SHARDS):
            key = f"polling:shard:{s}:queue:{task}"
            members = self.cmd("ZRANGE", key, 0, -1) or []
            for i in range(0, len(members), 500):
                args = ["ZADD", key, "XX"]
                for m in members[i:i + 500]:
                    args += [f"{score:.3f}", m]
                self.cmd(*args)

    def wake(self, task):
        """Wakes every node's dispatch loops of `task` for every shard, as the engine's own
        writers do after making entries due (`polling:queue:wake`, `<task> <shard> ...`);
        a cluster forwards a PUBLISH to every node."""
        shards = " ".join(str(s) for s in range(SHARDS))
        self.on(self.masters()[0], "PUBLISH", "polling:queue:wake", f"{task} {shards}")

    def count_below(self, task, score):
        return sum(int(self.cmd("ZCOUNT", f"polling:shard:{s}:queue:{task}", "-inf", f"{score:.3f}"))
                   for s in range(SHARDS))

    def time(self):
        return float(self.on(self.masters()[0], "TIME")[0])


def postgres(logdir):
    """The private PostgreSQL cluster of the fault suite (scripts/chaos/infra.py), on `pg`."""
    return Postgres(logdir, host=net.ip_of("pg"), port=5432, wrap=net.exec_in("pg"),
                    trust=f"{net.SUBNET}.0/24", max_connections=300)


HAPROXY_CFG = """# Written by scripts/hosts-test: the two cmp-api replicas, checked on /readyz.
global
    stats socket {sock} mode 600 level admin
    stats timeout 10s

defaults
    mode http
    option redispatch
    retries 3
    retry-on conn-failure empty-response response-timeout
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout http-request 10s

frontend api
    bind {lb}:8080
    default_backend cmp_api

backend cmp_api
    balance leastconn
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2
    server api1 {api1}:8080 check
    server api2 {api2}:8080 check
"""


class HAProxy:
    def __init__(self, procs, workdir):
        self.sock = os.path.join(workdir, "haproxy.sock")
        cfg = os.path.join(workdir, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(HAPROXY_CFG.format(sock=self.sock, lb=net.ip_of("lb"),
                                       api1=net.ip_of("api1"), api2=net.ip_of("api2")))
        subprocess.run(["haproxy", "-c", "-q", "-f", cfg], check=True, timeout=30)
        self.proc = procs.spawn("haproxy", ["haproxy", "-db", "-f", cfg], wrap=net.exec_in("lb"))
        self.addr = f"{net.ip_of('lb')}:8080"
        wait_until("haproxy socket", lambda: os.path.exists(self.sock), 20)

    def command(self, line):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(self.sock)
            s.sendall(line.encode() + b"\n")
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        return out.decode()

    def servers(self):
        """server -> {status, scur} of the cmp_api backend."""
        lines = self.command("show stat").splitlines()
        head = lines[0].lstrip("# ").split(",")
        out = {}
        for line in lines[1:]:
            row = dict(zip(head, line.split(",")))
            if row.get("pxname") == "cmp_api" and row.get("svname") in ("api1", "api2"):
                out[row["svname"]] = {"status": row["status"], "scur": int(row["scur"] or 0)}
        return out

    def set_state(self, server, state):
        self.command(f"set server cmp_api/{server} state {state}")


class HostWorld(World):
    """A database with a seeded fleet, the cluster flushed, and the processes of the hosts
    started against them. The figures (check, carrier calls, decisions) are fleet.World's."""

    def __init__(self, ctx, name, cards, interval, sim, intervals=None, fast=True, extra=None):
        self.ctx, self.name, self.cards, self.interval = ctx, name, cards, interval
        self.extra = extra or {}
        self.db = f"hosts_{name}_{os.getpid()}"
        ctx.pg.sql("postgres", f"CREATE DATABASE {self.db}")
        ctx.redis.flushall()
        self.sim_addr = sim
        self.sim = Http(sim)
        self.workers = []
        self.apis = {}
        self.api_proc = None
        self.seed(intervals, fast)

    LOG_VAR = "CMP_HOSTS_LOG"

    def lease_secs(self):
        return self.ctx.lease

    def env(self, extra=None):
        return super().env({**self.extra, **(extra or {})})

    def spawn_worker(self, host, extra=None):
        addr = f"{net.ip_of(host)}:9090"
        env = self.env({"CMP_WORKER_BIND": addr, **(extra or {})})
        p = self.ctx.procs.spawn(f"{self.name}-worker-{host}", [self.ctx.bin("cmp-worker"), "run"],
                                 env=env, wrap=net.exec_in(host))
        p.addr, p.host = addr, host
        p.http = Http(addr, timeout=3)
        self.workers.append(p)
        return p

    def worker(self, host):
        return next(w for w in self.workers if w.host == host)

    def spawn_api(self, host):
        addr = f"{net.ip_of(host)}:8080"
        p = self.ctx.procs.spawn(f"{self.name}-api-{host}", [self.ctx.bin("cmp-api"), "serve"],
                                 env=self.env({"CMP_API_BIND": addr}), wrap=net.exec_in(host))
        p.addr, p.host = addr, host
        p.http = Http(addr, timeout=5)
        self.apis[host] = p
        return p

    def start_apis(self):
        for h in ("api1", "api2"):
            self.spawn_api(h)
        for h in ("api1", "api2"):
            wait_until(f"cmp-api on {h} /readyz", lambda h=h: self.apis[h].http.status("/readyz") == 200, 60)
        # Through the balancer: the figures' explain calls and the load go the operators' way.
        self.api = Http(self.ctx.lb.addr, timeout=30)
        wait_until("both replicas UP in HAProxy",
                   lambda: all(s["status"] == "UP" for s in self.ctx.lb.servers().values()), 30)
        self.viewer = self.key("hosts-viewer", "viewer")
        self.api.key = self.viewer

    def stop_apis(self):
        for p in self.apis.values():
            self.ctx.procs.stop(p)
        self.apis = {}

    def close(self):
        self.stop_workers()
        self.stop_apis()
        try:
            self.ctx.pg.sql("postgres", f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
        except subprocess.CalledProcessError:
            pass


def metric_sum(http, name, **labels):
    """Sum of a counter's samples whose labels include `labels` (None if unreachable)."""
    try:
        st, text = http.call("GET", "/metrics")
    except OSError:
        return None
    if st != 200 or not isinstance(text, str):
        return None
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def now():
    return time.monotonic()
