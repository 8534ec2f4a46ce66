#!/usr/bin/env bash
# The dashboard's browser test: builds gateway-sim, cmp-worker and cmp-api (debug), starts them
# on free local ports with a fresh database and Redis key prefix of their own on a seeded fleet,
# creates an admin and a viewer key, runs bin-api/ui-tests/dashboard.test.mjs in headless
# Chromium (screenshots to target/ui-screenshots/), then stops everything and drops the database.
#
#   CMP_UI_ADMIN_URL  PostgreSQL URL allowed to create databases (default postgres://postgres@127.0.0.1:5432/postgres)
#   CMP_UI_REDIS_URL  (default redis://127.0.0.1:6379)
#   CMP_UI_CARDS      (default 200)
#   CMP_UI_TIMEZONE   the API's and worker's CMP_TIMEZONE (default Asia/Shanghai); the browser
#                     runs in another zone, and the test checks dates are shown in this one
#   CMP_UI_WARMUP_SECS  seconds of polling before the browser starts (default 8)
#   CMP_UI_HISTORY_POINTS  when set, the overview charts must draw at least that many minute
#                     samples: with CMP_UI_WARMUP_SECS=200 and 2, the charts show real history
# Needs psql, redis-cli, curl, python3, node + npm and /usr/bin/chromium (apt-get install chromium);
# fonts-wqy-microhei (or any CJK font) only makes the 中文 screenshot readable. npm ci fetches
# playwright-core (one package, no browser) from the npm registry the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

admin_url=${CMP_UI_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
redis_url=${CMP_UI_REDIS_URL:-redis://127.0.0.1:6379}
cards=${CMP_UI_CARDS:-200}
db_name=cmp_ui_$$
prefix="cmpui$$:"
shots=$root/target/ui-screenshots
logs=$(mktemp -d "${TMPDIR:-/tmp}/cmp-ui-test.XXXXXX")

for tool in psql redis-cli curl python3 node npm timeout; do
    command -v "$tool" >/dev/null || { echo "ui-test: $tool is required" >&2; exit 1; }
done
[ -x "${CMP_UI_CHROMIUM:-/usr/bin/chromium}" ] || {
    echo "ui-test: /usr/bin/chromium is required (apt-get install -y chromium)" >&2; exit 1; }

echo "ui-test: building gateway-sim, cmp-worker and cmp-api"
cargo build --quiet --bin gateway-sim --bin cmp-worker --bin cmp-api
bin=${CARGO_TARGET_DIR:-$root/target}/debug

if [ ! -d bin-api/ui-tests/node_modules/playwright-core ]; then
    echo "ui-test: npm ci (playwright-core only; no browser is downloaded)"
    (cd bin-api/ui-tests && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 300 npm ci --no-audit --no-fund --silent)
fi

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
sim_addr=127.0.0.1:$(free_port)
worker_addr=127.0.0.1:$(free_port)
api_addr=127.0.0.1:$(free_port)

. scripts/local-env.sh
export CMP_TIMEZONE=${CMP_UI_TIMEZONE:-Asia/Shanghai}

pids=()
cleanup() {
    local rc=$?
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do timeout 20 tail --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null || true; done
    psql "$admin_url" -q -c "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" >/dev/null 2>&1 || true
    redis-cli -u "$redis_url" --scan --pattern "${prefix}*" | xargs -r -n 1000 redis-cli -u "$redis_url" unlink >/dev/null || true
    if [ "$rc" -ne 0 ]; then
        echo "ui-test: FAILED (exit $rc); logs in $logs" >&2
        tail -n 20 "$logs"/*.log >&2 || true
    else
        rm -rf "$logs"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

psql "$admin_url" -q -c "CREATE DATABASE $db_name"
"$bin/gateway-sim" serve --bind "$sim_addr" --latency-ms 2 --jitter-ms 2 >"$logs/gateway-sim.log" 2>&1 &
pids+=($!)
timeout 60 "$bin/cmp-worker" migrate >"$logs/migrate.log" 2>&1
echo "ui-test: seeding $cards cards"
timeout 120 "$bin/cmp-worker" seed --cards "$cards" --gateway-url "http://$sim_addr" --demo >"$logs/seed.log" 2>&1
"$bin/cmp-worker" run >"$logs/worker.log" 2>&1 &
pids+=($!)
"$bin/cmp-api" serve >"$logs/api.log" 2>&1 &
pids+=($!)

for _ in $(seq 1 120); do
    curl -fsS "http://$api_addr/readyz" >/dev/null 2>&1 && break
    sleep 0.5
done
curl -fsS "http://$api_addr/readyz" >/dev/null || { echo "ui-test: cmp-api never became ready" >&2; exit 1; }

key() { timeout 30 "$bin/cmp-api" keys create --name "$1" --role "$2" 2>>"$logs/keys.log" | tail -n 1; }
admin_key=$(key ui-admin admin)
viewer_key=$(key ui-viewer viewer)
# A few seconds of polling so the card states and the manual lists have something to show.
sleep "${CMP_UI_WARMUP_SECS:-8}"

echo "ui-test: running the browser test against http://$api_addr"
rm -rf "$shots"
CMP_UI_TIMEZONE=$CMP_TIMEZONE CMP_UI_HISTORY_POINTS=${CMP_UI_HISTORY_POINTS:-0} \
CMP_UI_WORKER_METRICS=http://$worker_addr/metrics CMP_UI_URL=http://$api_addr CMP_UI_ADMIN_KEY=$admin_key CMP_UI_VIEWER_KEY=$viewer_key CMP_UI_SHOTS=$shots \
    timeout 300 node bin-api/ui-tests/dashboard.test.mjs
echo "ui-test: passed; screenshots in $shots"
