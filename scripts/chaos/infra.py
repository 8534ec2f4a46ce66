"""Private services and processes for the fault suite.

Everything a scenario starts is registered here and stopped at exit, also on failure or
Ctrl-C: the private PostgreSQL cluster and Redis server (ports in 27000-27999, never the shared
127.0.0.1:5432 / :6379), gateway-sim, cmp-worker and cmp-api processes.
"""

import glob
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

PORT_RANGE = (27000, 27999)


def free_port():
    """A port of 27000-27999 that nothing listens on now."""
    for _ in range(200):
        port = random.randint(*PORT_RANGE)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 27000-27999")


def build(root, release, who):
    """gateway-sim, cmp-worker and cmp-api built with cargo (debug unless `release`, into the
    ambient CARGO_TARGET_DIR); the directory they are in. `who` prefixes the line it prints."""
    argv = ["cargo", "build", "--quiet", "--bin", "gateway-sim", "--bin", "cmp-worker",
            "--bin", "cmp-api"] + (["--release"] if release else [])
    print(f"{who}: {' '.join(argv)}", flush=True)
    subprocess.run(argv, check=True, cwd=root)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(root, "target")
    return os.path.join(target, "release" if release else "debug")


def wait_until(what, cond, within, every=0.2):
    """Polls `cond` until it is true; raises naming `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            if cond():
                return
        except Exception:  # noqa: BLE001 - a service still starting answers with errors
            pass
        if time.monotonic() >= deadline:
            raise RuntimeError(f"{what}: not within {within}s")
        time.sleep(every)


def rss_kb(pid):
    """Resident set size of a process in KiB (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Procs:
    """Every process this run started, stopped at the end whatever happens."""

    def __init__(self, logdir):
        self.logdir = logdir
        self.live = []

    def spawn(self, name, argv, env=None, wrap=None):
        log = open(os.path.join(self.logdir, f"{name}.log"), "ab")
        full = (wrap or []) + argv
        p = subprocess.Popen(full, env=env, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        p.chaos_name = name
        self.live.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, within=30):
        """Sends `sig` to the process and waits for it; SIGKILL after `within` s."""
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout=within)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.live:
            self.live.remove(p)
        return p.returncode

    def stop_all(self):
        for p in list(self.live):
            self.stop(p, within=20)


class Redis:
    """A private redis-server without persistence; `restart` comes back empty."""

    def __init__(self, procs):
        self.procs = procs
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.proc = None
        self.start()

    def start(self):
        self.proc = self.procs.spawn(f"redis-{self.port}", [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--protected-mode", "no"])
        wait_until("private redis", lambda: self.cmd("PING") == "PONG", 20)

    def restart(self):
        self.procs.stop(self.proc, signal.SIGKILL)
        self.start()

    def cmd(self, *args):
        return resp_call(self.port, [list(args)])[0]

    def pipeline(self, commands):
        return resp_call(self.port, commands)


def resp_call(port, commands, host="127.0.0.1", timeout=10, errors=False):
    """Sends RESP commands on one connection and reads one reply each. An error reply raises
    RuntimeError; with `errors`, it is returned as one instead, in its place."""
    out = bytearray()
    for c in commands:
        out += b"*%d\r\n" % len(c)
        for a in c:
            b = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(b), b)
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(out)
        f = s.makefile("rb")
        replies = []
        for _ in commands:
            try:
                replies.append(read_reply(f))
            except RuntimeError as e:
                if not errors:
                    raise
                replies.append(e)
        return replies


def read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("redis closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode()
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise RuntimeError(f"unexpected redis reply {line!r}")


class Postgres:
    """A private PostgreSQL cluster in a temp dir, run as user postgres: on 127.0.0.1 and a free
    port, or on the address `host` (and `port`) with its commands run through `wrap` (another
    network namespace), where `trust` is the network whose clients it trusts."""

    def __init__(self, logdir, host="127.0.0.1", port=None, wrap=(), trust=None,
                 max_connections=200):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not bins:
            raise RuntimeError("PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin)")
        self.bin = bins[-1]
        self.host, self.wrap, self.max_connections = host, list(wrap), max_connections
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="cmp-chaos-pg.")
        self.log = os.path.join(logdir, f"postgres-{self.port}.log")
        shutil.chown(self.dir, "postgres", "postgres")
        os.chmod(self.dir, 0o700)
        self.as_pg([f"{self.bin}/initdb", "-D", f"{self.dir}/data", "-A", "trust",
                    "-U", "postgres", "--no-sync", "-E", "UTF8"])
        if trust:
            with open(f"{self.dir}/data/pg_hba.conf", "a") as f:
                f.write(f"host all all {trust} trust\n")
        # The log is written by the postgres user.
        open(self.log, "a").close()
        shutil.chown(self.log, "postgres", "postgres")
        self.start()

    def as_pg(self, argv, check=True):
        return subprocess.run(self.wrap + ["runuser", "-u", "postgres", "--"] + argv, check=check,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    def start(self):
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses={self.host} -c fsync=off "
                f"-c synchronous_commit=off -c full_page_writes=off "
                f"-c max_connections={self.max_connections}")
        self.as_pg([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-o", opts,
                    "-l", self.log, "-w", "-t", "60", "start"])

    def stop(self):
        """Fast shutdown: every session ended."""
        self.as_pg([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-m", "fast",
                    "-w", "-t", "60", "stop"])

    def restart(self, down_secs=0):
        """Fast shutdown, `down_secs` without a server, start again."""
        self.stop()
        time.sleep(down_secs)
        self.start()

    def url(self, db):
        return f"postgres://postgres@{self.host}:{self.port}/{db}"

    def sql(self, db, query):
        """Runs one statement with psql; rows as lists of strings."""
        r = subprocess.run(["psql", self.url(db), "-XAtq", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-c", query], check=True, capture_output=True, text=True, timeout=120)
        return [line.split("\t") for line in r.stdout.splitlines() if line]

    def close(self):
        self.as_pg([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-m", "immediate",
                    "-w", "stop"], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


class Http:
    """A keep-alive JSON client for one host:port."""

    def __init__(self, addr, key=None, timeout=30):
        host, port = addr.rsplit(":", 1)
        self.host, self.port, self.key, self.timeout = host, int(port), key, timeout
        self.conn = None

    def call(self, method, path, body=None, key=None):
        """(status, parsed JSON or text); reconnects once on a dropped connection."""
        headers = {"content-type": "application/json"}
        k = key if key is not None else self.key
        if k:
            headers["authorization"] = f"Bearer {k}"
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        try:
            return r.status, json.loads(raw) if raw else None
        except ValueError:
            return r.status, raw.decode(errors="replace")

    def status(self, path):
        try:
            return self.call("GET", path)[0]
        except (OSError, http.client.HTTPException):
            return None
