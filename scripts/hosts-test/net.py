"""The hosts: one network namespace per host, all on one bridge.

Every namespace is named `cmp-h-<host>`; the bridge lives in the `ctl` host (the test's own
host, which is also the switch), so nothing is added to the machine's own network namespace:
the addresses (10.77.0.0/24) exist only inside these namespaces. Cutting a host's link is its
bridge port set down (the cable pulled: packets are lost, nothing is refused); a partition is
an nftables table in the host that drops what it sends to, and receives from, the given
addresses. `teardown` ends every process left in the namespaces and deletes them.
"""

import ctypes
import os
import subprocess
import time

PREFIX = "cmp-h-"
SUBNET = "10.77.0"
CLONE_NEWNET = 0x40000000

# host -> last octet
ADDRS = {
    "ctl": 1,
    "lb": 10,
    "api1": 11, "api2": 12,
    "w1": 21, "w2": 22, "w3": 23, "w4": 24,
    "redis1": 31, "redis2": 32, "redis3": 33, "redis4": 34, "redis5": 35, "redis6": 36,
    "pg": 40,
    "sim": 50,
}


def ip_of(host):
    return f"{SUBNET}.{ADDRS[host]}"


def ns(host):
    return PREFIX + host


def sh(*argv, check=True, timeout=30):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def exec_in(host):
    """The argv prefix that runs a command on `host`."""
    return ["ip", "netns", "exec", ns(host)]


def existing():
    out = sh("ip", "netns", "list", check=False)
    return [line.split()[0] for line in out.splitlines()
            if line.strip() and line.split()[0].startswith(PREFIX)]


def kill_all_in(name):
    """SIGKILL every process still inside one of our namespaces (they are this test's)."""
    out = sh("ip", "netns", "pids", name, check=False)
    for pid in out.split():
        if int(pid) == os.getpid():
            continue  # the test itself, in ctl
        try:
            os.kill(int(pid), 9)
        except (ProcessLookupError, ValueError):
            pass


def teardown():
    for name in existing():
        kill_all_in(name)
    time.sleep(0.3)
    for name in sorted(existing(), key=lambda n: n == ns("ctl")):
        sh("ip", "netns", "del", name, check=False)


def enter(host):
    """Moves this process (its main thread, and every thread and child started after) into
    `host`'s namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/var/run/netns/{ns(host)}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    finally:
        os.close(fd)


def setup(hosts):
    """Creates the ctl host with the bridge, then one host per name, each on the bridge."""
    teardown()  # leftovers of a run that was killed
    sh("ip", "netns", "add", ns("ctl"))
    c = ["ip", "-n", ns("ctl")]
    sh(*c, "link", "set", "lo", "up")
    sh(*c, "link", "add", "br0", "type", "bridge")
    sh(*c, "link", "set", "br0", "up")
    sh(*c, "addr", "add", f"{ip_of('ctl')}/24", "dev", "br0")
    for host in hosts:
        if host == "ctl":
            continue
        sh("ip", "netns", "add", ns(host))
        port = port_of(host)
        # Both ends made inside ctl, one moved to the host: nothing touches the machine's own
        # network namespace.
        sh(*c, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns(host))
        sh(*c, "link", "set", port, "master", "br0", "up")
        h = ["ip", "-n", ns(host)]
        sh(*h, "link", "set", "lo", "up")
        sh(*h, "addr", "add", f"{ip_of(host)}/24", "dev", "eth0")
        sh(*h, "link", "set", "eth0", "up")


def port_of(host):
    return f"p-{host}"


def cut(host):
    """The host's cable pulled: its bridge port down."""
    sh("ip", "-n", ns("ctl"), "link", "set", port_of(host), "down")


def restore(host):
    sh("ip", "-n", ns("ctl"), "link", "set", port_of(host), "up")


def partition(host, peers):
    """Drops everything `host` exchanges with `peers` (hosts), both ways, silently."""
    addrs = ", ".join(ip_of(p) for p in peers)
    rules = f"""table inet cmp_partition {{
    chain out {{ type filter hook output priority 0; policy accept; ip daddr {{ {addrs} }} drop; }}
    chain in {{ type filter hook input priority 0; policy accept; ip saddr {{ {addrs} }} drop; }}
}}
"""
    r = subprocess.run(exec_in(host) + ["nft", "-f", "-"], input=rules, text=True,
                       capture_output=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"nft on {host}: {r.stderr.strip()}")


def heal(host):
    sh(*exec_in(host), "nft", "delete", "table", "inet", "cmp_partition", check=False)
