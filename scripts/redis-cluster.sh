#!/usr/bin/env bash
# A local Redis Cluster for tests, CI, the bench and the demo: one redis-server per port with
# --cluster-enabled yes, no persistence, in a temp dir of its own.
#
#   scripts/redis-cluster.sh start [--replicas N] PORT...   start, create, wait for cluster_state:ok
#                                                           (and, with replicas, for each to be in sync)
#   scripts/redis-cluster.sh stop PORT...                   SHUTDOWN NOSAVE each node, remove its dir
#   scripts/redis-cluster.sh restart PORT                   SIGKILL one node, start it again empty
#   scripts/redis-cluster.sh status PORT...                 exit 0 when every port answers cluster_state:ok
#   scripts/redis-cluster.sh url PORT...                    the fred URL: redis-cluster://h:p?node=h:p&...
#
# `start` on ports that already form a healthy cluster does nothing (CI starts it when absent).
# With --replicas 1, six ports give three masters with one replica each (the failover test).
# Node directories: ${CMP_CLUSTER_DIR:-/tmp/cmp-redis-cluster}/PORT (nodes.conf, log).
set -euo pipefail

host=127.0.0.1
base=${CMP_CLUSTER_DIR:-${TMPDIR:-/tmp}/cmp-redis-cluster}

usage() {
    echo "usage: $0 start [--replicas N] PORT... | stop PORT... | restart PORT | status PORT... | url PORT..." >&2
    exit 2
}

healthy() { # port -> 0 when the node reports cluster_state:ok
    redis-cli -h "$host" -p "$1" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok'
}

all_healthy() {
    for p in "$@"; do healthy "$p" || return 1; done
}

synced() { # port -> 0 when the node is a replica or a master whose replicas are all online
    local info; info=$(redis-cli -h "$host" -p "$1" info replication 2>/dev/null | tr -d '\r')
    grep -qx 'role:slave' <<<"$info" && return 0
    ! grep -E '^slave[0-9]+:' <<<"$info" | grep -qv 'state=online'
}

all_synced() {
    for p in "$@"; do synced "$p" || return 1; done
}

url() {
    local first=$1; shift
    local out="redis-cluster://$host:$first"
    local sep='?'
    for p in "$@"; do out+="${sep}node=$host:$p"; sep='&'; done
    echo "$out"
}

launch() { # port: one node, its directory (and nodes.conf, if any) kept
    local dir="$base/$1"
    redis-server --port "$1" --bind "$host" --daemonize yes --dir "$dir" \
        --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" \
        --cluster-node-timeout "${CMP_CLUSTER_NODE_TIMEOUT_MS:-2000}" \
        --cluster-replica-validity-factor 0 \
        --repl-diskless-sync-delay 0 \
        --save "" --appendonly no --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
}

wait_ping() {
    for _ in $(seq 1 50); do
        redis-cli -h "$host" -p "$1" ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
}

# SIGKILL one node and start it again from its nodes.conf, with no data (nothing persists):
# a master comes back empty, a replica asks its master for a full sync.
restart() {
    local dir="$base/$1"
    [ -f "$dir/nodes.conf" ] || { echo "redis-cluster: no node on port $1 under $base" >&2; exit 1; }
    if [ -f "$dir/redis.pid" ]; then kill -9 "$(cat "$dir/redis.pid")" 2>/dev/null || true; fi
    for _ in $(seq 1 50); do
        redis-cli -h "$host" -p "$1" ping >/dev/null 2>&1 || break
        sleep 0.1
    done
    rm -f "$dir/redis.pid"
    launch "$1"
    wait_ping "$1"
}

start() {
    local replicas=0
    if [ "${1:-}" = "--replicas" ]; then replicas=$2; shift 2; fi
    [ $# -ge 3 ] || { echo "redis-cluster: at least three ports" >&2; exit 2; }
    if all_healthy "$@"; then
        echo "redis-cluster: already up on $*"
        return 0
    fi
    local p
    for p in "$@"; do
        if redis-cli -h "$host" -p "$p" ping >/dev/null 2>&1; then
            echo "redis-cluster: port $p answers but is not part of a healthy cluster; stop it first" >&2
            exit 1
        fi
    done
    for p in "$@"; do
        rm -rf "${base:?}/$p"
        mkdir -p "$base/$p"
        launch "$p"
    done
    for p in "$@"; do wait_ping "$p"; done
    local nodes=()
    for p in "$@"; do nodes+=("$host:$p"); done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$replicas" --cluster-yes >"$base/create-$1.log" 2>&1 || {
        cat "$base/create-$1.log" >&2
        exit 1
    }
    # A replica attached but not yet synced holds nothing: killed then, its master's slots
    # would fail over to an empty node (validity factor 0 lets any replica take over). Wait
    # for the initial sync (immediate: no diskless-sync delay) as well as the cluster state.
    for _ in $(seq 1 100); do
        if all_healthy "$@" && all_synced "$@"; then
            echo "redis-cluster: up on $* ($(url "$@"))"
            return 0
        fi
        sleep 0.2
    done
    echo "redis-cluster: no cluster_state:ok with every replica in sync on $* after 20 s" >&2
    exit 1
}

stop() {
    local p
    for p in "$@"; do
        redis-cli -h "$host" -p "$p" shutdown nosave >/dev/null 2>&1 || true
    done
    for p in "$@"; do
        for _ in $(seq 1 50); do
            redis-cli -h "$host" -p "$p" ping >/dev/null 2>&1 || break
            sleep 0.1
        done
        rm -rf "${base:?}/$p"
    done
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case "$cmd" in
    start) start "$@" ;;
    stop) [ $# -ge 1 ] || usage; stop "$@" ;;
    restart) [ $# -eq 1 ] || usage; restart "$1" ;;
    status) [ $# -ge 1 ] || usage; all_healthy "$@" ;;
    url) [ $# -ge 1 ] || usage; url "$@" ;;
    *) usage ;;
esac
