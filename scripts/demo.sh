#!/usr/bin/env bash
# The demo: a fresh database and Redis key space, 100,000 cards in PostgreSQL and in
# gateway-sim, then gateway-sim, cmp-worker and cmp-api running, with live progress until
# Ctrl-C (or --duration SECONDS).
#
# Uses the local PostgreSQL and Redis (or those of `just up`):
#   CMP_DEMO_ADMIN_URL  PostgreSQL URL allowed to create databases (default postgres://postgres@127.0.0.1:5432/postgres)
#   CMP_DEMO_REDIS_URL  (default redis://127.0.0.1:6379)
#   CMP_DEMO_CARDS      (default 100000)
# `--cluster` runs it on a local three-master Redis Cluster instead (scripts/redis-cluster.sh on
# CMP_DEMO_CLUSTER_PORTS, default 7131 7132 7133), started when absent and stopped at the end
# if the demo started it.
# `--carriers mixed` spreads the fleet over six carriers, one per protocol (the project's own,
# OneLink, China Telecom 5GCMP, Control Center, 1NCE, emnify), each configured through the admin
# API against its platform on gateway-sim (every platform on its path prefix of one simulator).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=0
cluster=0
carriers=single
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration=$2; shift 2 ;;
        --duration=*) duration=${1#*=}; shift ;;
        --cluster) cluster=1; shift ;;
        --carriers) carriers=$2; shift 2 ;;
        --carriers=*) carriers=${1#*=}; shift ;;
        *) echo "usage: just demo [--duration SECONDS] [--cluster] [--carriers mixed]" >&2; exit 2 ;;
    esac
done
duration=${CMP_DEMO_DURATION:-$duration}
case "$carriers" in
    single) seed_carriers=3 ;;
    mixed) seed_carriers=6 ;;
    *) echo "demo: --carriers takes \`mixed\` (got \`$carriers\`)" >&2; exit 2 ;;
esac

admin_url=${CMP_DEMO_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
redis_url=${CMP_DEMO_REDIS_URL:-redis://127.0.0.1:6379}
cluster_ports=(${CMP_DEMO_CLUSTER_PORTS:-7131 7132 7133})
cluster_started=0
cards=${CMP_DEMO_CARDS:-100000}
db_name=cmp_demo
prefix="demo:"
sim_addr=127.0.0.1:17070
worker_addr=127.0.0.1:19090
api_addr=127.0.0.1:18080
logs=${TMPDIR:-/tmp}/cmp-demo
mkdir -p "$logs"

for tool in psql redis-cli curl; do
    command -v "$tool" >/dev/null || { echo "demo: $tool is required" >&2; exit 1; }
done

echo "demo: building release binaries (first time: a few minutes)"
cargo build --release --bins --quiet
bin=${CARGO_TARGET_DIR:-target}/release

. scripts/local-env.sh

if [ "$cluster" -eq 1 ]; then
    if ! scripts/redis-cluster.sh status "${cluster_ports[@]}"; then
        scripts/redis-cluster.sh start "${cluster_ports[@]}"
        cluster_started=1
    fi
    redis_url=$(scripts/redis-cluster.sh url "${cluster_ports[@]}")
    export CMP_REDIS_URL=$redis_url
    echo "demo: Redis Cluster $redis_url"
fi

echo "demo: fresh database $db_name and Redis prefix $prefix"
psql "$admin_url" -q -c "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" -c "CREATE DATABASE $db_name"
if [ "$cluster" -eq 1 ]; then
    # Per node, one UNLINK per key: keys of different slots in one UNLINK fail with CROSSSLOT.
    for p in "${cluster_ports[@]}"; do
        redis-cli -p "$p" --scan --pattern "${prefix}*" | sed 's/^/UNLINK /' | redis-cli -p "$p" >/dev/null
    done
else
    redis-cli -u "$redis_url" --scan --pattern "${prefix}*" | xargs -r -n 1000 redis-cli -u "$redis_url" unlink >/dev/null
fi

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    if [ "$cluster_started" -eq 1 ]; then scripts/redis-cluster.sh stop "${cluster_ports[@]}"; fi
}
trap cleanup EXIT
trap 'exit 0' INT TERM

"$bin/gateway-sim" serve --bind "$sim_addr" --latency-ms 5 --jitter-ms 5 >"$logs/gateway-sim.log" 2>&1 &
pids+=($!)
"$bin/cmp-worker" migrate >"$logs/migrate.log" 2>&1
echo "demo: seeding $cards cards into PostgreSQL and gateway-sim"
"$bin/cmp-worker" seed --cards "$cards" --gateway-url "http://$sim_addr" --demo \
    --carriers "$seed_carriers" 2>"$logs/seed.log"

"$bin/cmp-worker" run >"$logs/worker.log" 2>&1 &
pids+=($!)
"$bin/cmp-api" serve >"$logs/api.log" 2>&1 &
pids+=($!)
viewer_key=$("$bin/cmp-api" keys create --name demo-viewer --role viewer 2>>"$logs/keys.log" | tail -n 1)
admin_key=$("$bin/cmp-api" keys create --name demo-admin --role admin 2>>"$logs/keys.log" | tail -n 1)
if [ "$carriers" = mixed ]; then
    # Carrier 1 keeps the project's own protocol; 2..6 speak a real platform's, each with the
    # simulator's default account (docs/carriers/<protocol>.md) and a demo-sized budget.
    for _ in $(seq 1 50); do curl -fsS "http://$api_addr/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
    i=1
    for spec in "cmp-json||{}" \
        "onelink|/onelink|{\"appid\":\"sim-onelink-appid\",\"password\":\"sim-onelink-password\"}" \
        "ctcc-5gcmp|/ctcc|{\"app_key\":\"sim-ctcc-app-key\",\"secret\":\"sim-ctcc-secret\"}" \
        "control-center|/control-center|{\"username\":\"sim-cc-user\",\"api_key\":\"sim-cc-api-key\"}" \
        "1nce|/1nce|{\"client_id\":\"sim-1nce-client\",\"client_secret\":\"sim-1nce-secret\"}" \
        "emnify|/emnify|{\"application_token\":\"sim-emnify-application-token\"}"; do
        IFS='|' read -r protocol path creds <<<"$spec"
        body="{\"carrier_id\":$i,\"name\":\"demo $protocol\",\"protocol\":\"$protocol\",\"base_url\":\"http://$sim_addr$path\",\"credentials\":$creds,\"rate_limit_per_sec\":0,\"max_concurrent\":64,\"batch_size\":1,\"timeout_ms\":5000}"
        curl -fsS -X POST "http://$api_addr/api/admin/carriers" -H "Authorization: Bearer $admin_key" \
            -H 'Content-Type: application/json' -d "$body" >>"$logs/carriers.log" 2>&1 \
            || { echo "demo: configuring carrier $i ($protocol) failed; see $logs/carriers.log" >&2; exit 1; }
        echo "demo: carrier $i speaks $protocol at http://$sim_addr$path"
        i=$((i + 1))
    done
fi
echo "demo: worker metrics http://$worker_addr/metrics, API http://$api_addr, logs in $logs"
echo "demo: dashboard http://$api_addr/  viewer key $viewer_key  admin key $admin_key"
echo "demo: Ctrl-C to stop"

metric() { # name, label filter -> summed value
    awk -v n="$1" -v f="${2:-}" '$1 ~ "^"n"({|$)" && index($1, f) { s += $2 } END { printf "%d", s }' <<<"$scrape"
}

start=$(date +%s)
declare -A last=()
total_polls=0
while true; do
    sleep 5
    scrape=$(curl -fsS "http://$worker_addr/metrics" 2>/dev/null || true)
    [ -n "$scrape" ] || { echo "demo: waiting for the worker..."; continue; }
    line="$(date +%T)"
    total_polls=0
    for t in realname carddata package protect; do
        n=$(metric cmp_tasks_handled_total "task=\"$t\"")
        rate=$(( (n - ${last[$t]:-0}) / 5 ))
        last[$t]=$n
        total_polls=$((total_polls + n))
        line+="  $t ${rate}/s"
    done
    stops=""
    for r in not_realname no_package traffic_exhausted protect; do
        stops+=" $r=$(metric cmp_card_stops_total "reason=\"$r\"")"
    done
    starts=$(metric cmp_card_starts_total)
    backlog=$(metric cmp_due_backlog)
    echo "$line | stops:$stops | resumes=$starts | due backlog=$backlog"
    if [ "$duration" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$duration" ]; then
        echo "demo: done after ${duration}s: $total_polls polls, stops:$stops, resumes=$starts"
        [ "$total_polls" -gt 0 ] || { echo "demo: no poll happened; see $logs/worker.log" >&2; exit 1; }
        exit 0
    fi
done
