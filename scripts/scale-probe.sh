#!/usr/bin/env bash
# The figures of docs/scale.md: Redis memory per card and PostgreSQL work per poll, on the single
# Redis or a cluster.
#
#   scripts/scale-probe.sh [--redis URL] [--cards N] [--secs S]
#
# 1. A fresh database cmp_scale (CMP_SCALE_ADMIN_URL, default postgres://postgres@127.0.0.1:5432/postgres),
#    `cmp-worker seed --cards N` (the default configs, not the demo's), gateway-sim with no latency.
# 2. Redis memory per card: used_memory (summed over the masters of a cluster) before and after
#    `cmp-worker init` under the key prefix `scale:`, divided by the cards initialised.
# 3. PostgreSQL work per poll, per task type: every queue of the other types pushed a day ahead,
#    every member of this type due now, `cmp-worker run` until each queued card was handled once
#    (or S seconds); pg_stat_database of cmp_scale (transactions, rows read, inserted, updated)
#    before and after, less what an idle worker (nothing due) does over the same time, divided
#    by the polls the worker's /metrics counted. The first poll of a
#    card misses the card cache, as every poll does at intervals longer than its 300 s TTL.
# Uses the binaries of ${CARGO_TARGET_DIR:-target}/release, else debug. Keys are removed by prefix
# at the end, the database is dropped. Never FLUSHALL.
set -euo pipefail
cd "$(dirname "$0")/.."

redis_url=redis://127.0.0.1:6379
cards=20000
secs=120
while [ $# -gt 0 ]; do
    case "$1" in
        --redis) redis_url=$2; shift 2 ;;
        --cards) cards=$2; shift 2 ;;
        --secs) secs=$2; shift 2 ;;
        *) echo "usage: $0 [--redis URL] [--cards N] [--secs S]" >&2; exit 2 ;;
    esac
done

target=${CARGO_TARGET_DIR:-target}
bin=$target/release
[ -x "$bin/cmp-worker" ] && [ -x "$bin/gateway-sim" ] || bin=$target/debug
for b in cmp-worker gateway-sim; do
    [ -x "$bin/$b" ] || { echo "scale-probe: $bin/$b missing (cargo build --bins)" >&2; exit 1; }
done

admin_url=${CMP_SCALE_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
db=cmp_scale
prefix="scale:"
sim_addr=127.0.0.1:17170
worker_addr=127.0.0.1:19190
logs=${TMPDIR:-/tmp}/cmp-scale-probe
mkdir -p "$logs"

# host:port of the single server or of every master of the cluster.
if [[ "$redis_url" == *-cluster://* ]]; then
    first=$(sed -E 's#^[a-z-]+://([^/?]*).*#\1#' <<<"$redis_url")
    masters=$(redis-cli -h "${first%:*}" -p "${first#*:}" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ {split($2, a, "@"); print a[1]}')
else
    hp=$(sed -E 's#^[a-z]+://([^/?]*).*#\1#' <<<"$redis_url")
    masters=${hp}
fi
rcli() { local node=$1; shift; redis-cli -h "${node%:*}" -p "${node#*:}" "$@"; }
used_memory() {
    local total=0 n node
    for node in $masters; do
        n=$(rcli "$node" info memory | tr -d '\r' | sed -n 's/^used_memory://p')
        total=$((total + n))
    done
    echo "$total"
}
lazyfree_wait() {
    local node
    for node in $masters; do
        while [ "$(rcli "$node" info memory | tr -d '\r' | sed -n 's/^lazyfree_pending_objects://p')" != 0 ]; do sleep 0.1; done
    done
}
clean_keys() {
    local node
    for node in $masters; do
        rcli "$node" --scan --pattern "${prefix}*" | sed 's/^/UNLINK /' | rcli "$node" >/dev/null
    done
    lazyfree_wait
}
# Runs a one-key script on KEYS[1] on the node that owns it.
on_key() { # key, lua, args...
    local key=$1 lua=$2; shift 2
    local node
    node=$(echo $masters | awk '{print $1}')
    redis-cli -c -h "${node%:*}" -p "${node#*:}" eval "$lua" 1 "$key" "$@" >/dev/null
}
set_all_scores='local m = redis.call("ZRANGE", KEYS[1], 0, -1) for i = 1, #m do redis.call("ZADD", KEYS[1], ARGV[1], m[i]) end return #m'

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    clean_keys || true
    psql "$admin_url" -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
}
trap cleanup EXIT

export CMP_DATABASE_URL=${admin_url%/*}/$db
export CMP_REDIS_URL=$redis_url
export CMP_REDIS_KEY_PREFIX=$prefix
export CMP_GATEWAY_URL=http://$sim_addr
export CMP_WORKER_BIND=$worker_addr
export CMP_LOG=${CMP_LOG:-warn}

psql "$admin_url" -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
clean_keys
"$bin/gateway-sim" serve --bind "$sim_addr" >"$logs/gateway-sim.log" 2>&1 &
pids+=($!)
"$bin/cmp-worker" migrate >"$logs/migrate.log" 2>&1
"$bin/cmp-worker" seed --cards "$cards" --gateway-url "http://$sim_addr" 2>"$logs/seed.log" >/dev/null

mem_before=$(used_memory)
"$bin/cmp-worker" init >"$logs/init.log" 2>&1
lazyfree_wait
mem_after=$(used_memory)
queued=$(psql "$CMP_DATABASE_URL" -tAc "SELECT count(*) FROM tb_iot_card WHERE enable_polling AND deleted_at IS NULL")
entries=0
for t in realname carddata package protect; do
    for s in $(seq 0 15); do
        node=$(echo $masters | awk '{print $1}')
        n=$(redis-cli -c -h "${node%:*}" -p "${node#*:}" zcard "${prefix}polling:shard:$s:queue:$t")
        entries=$((entries + n))
    done
done
echo "redis: $cards cards seeded, $entries queue entries, used_memory $mem_before -> $mem_after:" \
    "$(( (mem_after - mem_before) / cards )) B per card, $(( (mem_after - mem_before) / (entries > 0 ? entries : 1) )) B per entry"

pg_stats() {
    psql "$admin_url" -tAc "SELECT xact_commit, tup_fetched, tup_returned, tup_inserted, tup_updated, tup_deleted FROM pg_stat_database WHERE datname = '$db'"
}
handled() { # task -> cmp_tasks_handled_total summed over outcomes
    curl -fsS "http://$worker_addr/metrics" 2>/dev/null |
        awk -v t="task=\"$1\"" '$1 ~ /^cmp_tasks_handled_total\{/ && index($1, t) { s += $2 } END { printf "%d", s }'
}

far=$(( $(date +%s) + 86400 ))
# The worker's own background work (periodic jobs, gauges sampled every 10 s) with nothing due:
# per second, subtracted from the rows below so that they count the polls alone.
for t in realname carddata package protect; do
    for s in $(seq 0 15); do on_key "${prefix}polling:shard:$s:queue:$t" "$set_all_scores" "$far"; done
done
sleep 2
read -r x0 f0 r0 i0 u0 _ < <(pg_stats | tr '|' ' ')
"$bin/cmp-worker" run >"$logs/worker-idle.log" 2>&1 &
worker=$!
idle_start=$(date +%s.%N)
sleep "$secs"
kill -TERM "$worker"; wait "$worker" || true
idle_secs=$(echo "$(date +%s.%N) - $idle_start" | bc)
sleep 2
read -r x1 f1 r1 i1 u1 _ < <(pg_stats | tr '|' ' ')
ix=$(echo "($x1 - $x0) / $idle_secs" | bc -l); if_=$(echo "($f1 - $f0) / $idle_secs" | bc -l)
ir=$(echo "($r1 - $r0) / $idle_secs" | bc -l); ii=$(echo "($i1 - $i0) / $idle_secs" | bc -l)
iu=$(echo "($u1 - $u0) / $idle_secs" | bc -l)
printf 'idle worker, per second: %.2f xact, %.1f fetched, %.1f returned, %.2f inserted, %.2f updated\n' "$ix" "$if_" "$ir" "$ii" "$iu"
echo "per poll, net of the idle worker's background work over the same time:"
printf '%-9s %7s %7s %10s %12s %12s %11s %11s\n' task polls secs "xact/poll" "fetched/poll" "returned/poll" "ins/poll" "upd/poll"
for task in realname carddata package protect; do
    for t in realname carddata package protect; do
        score=$far
        [ "$t" = "$task" ] && score=0
        for s in $(seq 0 15); do on_key "${prefix}polling:shard:$s:queue:$t" "$set_all_scores" "$score"; done
    done
    due=0
    for s in $(seq 0 15); do
        node=$(echo $masters | awk '{print $1}')
        n=$(redis-cli -c -h "${node%:*}" -p "${node#*:}" zcard "${prefix}polling:shard:$s:queue:$task")
        due=$((due + n))
    done
    sleep 2 # let PostgreSQL's statistics settle before the first reading
    read -r x0 f0 r0 i0 u0 _ < <(pg_stats | tr '|' ' ')
    "$bin/cmp-worker" run >"$logs/worker-$task.log" 2>&1 &
    worker=$!
    start=$(date +%s.%N)
    n=0
    while :; do
        sleep 1
        n=$(handled "$task"); n=${n:-0}
        [ "$n" -ge "$due" ] && break
        (( $(date +%s) - ${start%.*} >= secs )) && break
    done
    took=$(echo "$(date +%s.%N) - $start" | bc)
    kill -TERM "$worker"; wait "$worker" || true
    sleep 2 # the worker's connections flushed their statistics on close
    read -r x1 f1 r1 i1 u1 _ < <(pg_stats | tr '|' ' ')
    [ "$n" -gt 0 ] || { echo "$task: no poll handled; see $logs/worker-$task.log" >&2; continue; }
    printf '%-9s %7d %7.1f %10.2f %12.2f %12.2f %11.2f %11.2f\n' "$task" "$n" "$took" \
        "$(echo "($x1 - $x0 - $ix * $took) / $n" | bc -l)" "$(echo "($f1 - $f0 - $if_ * $took) / $n" | bc -l)" \
        "$(echo "($r1 - $r0 - $ir * $took) / $n" | bc -l)" "$(echo "($i1 - $i0 - $ii * $took) / $n" | bc -l)" \
        "$(echo "($u1 - $u0 - $iu * $took) / $n" | bc -l)"
done
