#!/usr/bin/env bash
# What one operator stop costs: PostgreSQL statements (by the server's statement log), Redis
# commands (MONITOR on a private redis-server) and the card-row reads among them, for
# `POST /api/admin/cards/{id}/stop` on an online card of a small seeded fleet. Only cmp-api runs
# (no worker), so every statement and command counted is the stop's.
#
#   scripts/measure-operator-stop.sh [BIN_DIR]     (default target/debug; needs gateway-sim,
#                                                   cmp-worker and cmp-api built there)
# Uses the local PostgreSQL (superuser `postgres`, its log in /var/log/postgresql) and starts
# its own redis-server on 127.0.0.1:6391; leaves nothing behind.
set -euo pipefail
bin=${1:-${CARGO_TARGET_DIR:-target}/debug}
db=cmp_measure_stop_$$
pg_admin=postgres://postgres@127.0.0.1:5432/postgres
redis_port=6391
sim=127.0.0.1:6392
api=127.0.0.1:6393
work=$(mktemp -d)
pglog=$(ls /var/log/postgresql/postgresql-*-main.log | head -n1)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    redis-cli -p $redis_port shutdown nosave >/dev/null 2>&1 || true
    psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    if [ -n "${KEEP:-}" ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

redis-server --daemonize yes --bind 127.0.0.1 --port $redis_port --save "" --appendonly no >/dev/null
psql "$pg_admin" -qc "CREATE DATABASE $db" >/dev/null
export CMP_DATABASE_URL=postgres://postgres@127.0.0.1:5432/$db
export CMP_REDIS_URL=redis://127.0.0.1:$redis_port
export CMP_GATEWAY_URL=http://$sim
export CMP_API_BIND=$api
export CMP_LOG=warn

"$bin/gateway-sim" serve --bind "$sim" >"$work/sim.log" 2>&1 &
pids+=($!)
"$bin/cmp-worker" migrate >"$work/migrate.log" 2>&1
"$bin/cmp-worker" seed --cards 200 --gateway-url "http://$sim" 2>"$work/seed.log" >/dev/null
# Queues as a worker's initializer leaves them, so the alignment has something to align.
"$bin/cmp-worker" init >"$work/init.log" 2>&1 || true
key=$("$bin/cmp-api" keys create --name measure --role admin 2>>"$work/keys.log" | tail -n 1)
psql "$pg_admin" -qc "ALTER DATABASE $db SET log_statement = 'all'" >/dev/null
"$bin/cmp-api" serve >"$work/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -fsS "http://$api/readyz" >/dev/null 2>&1 && break; sleep 0.2; done

card=$(psql "$CMP_DATABASE_URL" -Atc "SELECT id FROM tb_iot_card WHERE network_status = 1 AND deleted_at IS NULL ORDER BY id LIMIT 1")
# Warm the API's pools with one read, then measure the stop alone.
curl -fsS "http://$api/api/admin/cards/$card" -H "Authorization: Bearer $key" >/dev/null
sleep 1
offset=$(stat -c %s "$pglog")
redis-cli -p $redis_port monitor >"$work/monitor.log" &
mon=$!
sleep 0.5
code=$(curl -sS -o "$work/answer.json" -w '%{http_code}' -X POST \
    "http://$api/api/admin/cards/$card/stop" -H "Authorization: Bearer $key")
sleep 1
kill $mon 2>/dev/null || true
# A statement's text may span lines: join the continuation lines to their entry first.
tail -c +$((offset + 1)) "$pglog" |
    awk '/^[0-9][0-9][0-9][0-9]-/ { if (entry) print entry; entry = $0; next } { entry = entry " " $0 } END { if (entry) print entry }' |
    grep -E "LOG:  (statement|execute)" >"$work/pg.log" || true

echo "operator stop of card $card: HTTP $code"
echo "PostgreSQL statements:        $(wc -l <"$work/pg.log")"
echo "  of which BEGIN/COMMIT:      $(grep -ciE ': (BEGIN|COMMIT)' "$work/pg.log" || true)"
echo "  card-row reads (SELECT … FROM tb_iot_card, not the writes' FOR UPDATE locks):" \
     "$(grep -E ': SELECT' "$work/pg.log" | grep -E 'FROM "?tb_iot_card"?( |$)' | grep -vc 'FOR UPDATE' || true)"
echo "  device polling-flag reads:  $(grep -E ': SELECT' "$work/pg.log" | grep -c 'FROM tb_device' || true)"
echo "  the API's own audit row:    $(grep -c 'tb_admin_audit_log' "$work/pg.log" || true)"
echo "Redis commands:               $(grep '"' "$work/monitor.log" | grep -vc ' \[0 lua\] ' || true) (and $(grep -c ' \[0 lua\] ' "$work/monitor.log" || true) inside scripts)"
# Commands of one connection less than 1 ms apart went out together: one round trip.
echo "Redis round trips (bursts):   $(grep '"' "$work/monitor.log" | grep -v ' \[0 lua\] ' |
    awk '{ t = $1; c = $3; if (!(c in last) || t - last[c] > 0.001) n++; last[c] = t } END { print n + 0 }')"
echo "queue alignments (bursts on polling:shard:* keys): $(grep '"polling:shard:' "$work/monitor.log" | grep -v ' \[0 lua\] ' |
    awk '{ t = $1; c = $3; if (!(c in last) || t - last[c] > 0.001) n++; last[c] = t } END { print n + 0 }')"
echo "Redis commands by name:"
grep '"' "$work/monitor.log" | sed -E 's/^[0-9.]+ \[[^]]*\] "([A-Za-z]+)".*/\1/' | sort | uniq -c | sed 's/^/  /'
