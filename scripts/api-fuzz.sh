#!/usr/bin/env bash
# Property-based run of schemathesis against a running cmp-api: every operation of
# /api/openapi.json with generated inputs, checking that nothing answers 5xx and that every
# answer conforms to the document (status codes, content types, schemas). Two runs: the
# examples, coverage and fuzzing phases (each operation on its own), then the stateful phase,
# which follows the document's OpenAPI links (create -> read/update/delete, bind -> unbind, ...)
# for a time of its own, checks besides that a deleted resource is gone and a created one is
# found, and prints how many steps and links it exercised.
#
# Against an API already running (e.g. `just demo`):
#   CMP_FUZZ_URL=http://127.0.0.1:18080 CMP_FUZZ_KEY=cmp_... just api-fuzz
# Otherwise it starts its own: a fresh database and Redis prefix, gateway-sim and cmp-api, and
# an admin key, all removed at the end.
#   CMP_FUZZ_ADMIN_URL   PostgreSQL URL allowed to create databases (default postgres://postgres@127.0.0.1:5432/postgres)
#   CMP_FUZZ_REDIS_URL   (default redis://127.0.0.1:6379)
#   CMP_FUZZ_EXAMPLES    examples per operation (default 20; CI: a small number)
#   CMP_FUZZ_SECS        the whole run's time bound (default 300)
#   CMP_FUZZ_STATEFUL_SECS  the stateful phase's share of it (default: a third, at least 60 s)
set -euo pipefail
cd "$(dirname "$0")/.."

examples=${CMP_FUZZ_EXAMPLES:-20}
secs=${CMP_FUZZ_SECS:-300}
stateful_secs=${CMP_FUZZ_STATEFUL_SECS:-$(( secs / 3 > 60 ? secs / 3 : 60 ))}
deadline=$(( $(date +%s) + secs ))
url=${CMP_FUZZ_URL:-}
key=${CMP_FUZZ_KEY:-}
logs=${TMPDIR:-/tmp}/cmp-api-fuzz
mkdir -p "$logs"

for tool in schemathesis openapi-spec-validator; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "api-fuzz: installing $tool"
        python3 -m pip install --quiet "$tool"
    fi
done

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    if [ -n "${own_db:-}" ]; then
        psql "$admin_url" -q -c "DROP DATABASE IF EXISTS $own_db WITH (FORCE)" || true
        redis-cli -u "$redis_url" --scan --pattern "${prefix}*" | xargs -r -n 1000 redis-cli -u "$redis_url" unlink >/dev/null || true
    fi
}
trap cleanup EXIT

if [ -z "$url" ] || [ -z "$key" ]; then
    admin_url=${CMP_FUZZ_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
    redis_url=${CMP_FUZZ_REDIS_URL:-redis://127.0.0.1:6379}
    own_db=cmp_fuzz_$$
    prefix="fuzz$$:"
    sim_addr=127.0.0.1:27070
    api_addr=127.0.0.1:28080
    cargo build --quiet -p cmp-api -p gateway-sim --bins
    bin=${CARGO_TARGET_DIR:-target}/debug
    psql "$admin_url" -q -c "CREATE DATABASE $own_db"
    export CMP_DATABASE_URL=${admin_url%/*}/$own_db
    export CMP_REDIS_URL=$redis_url
    export CMP_REDIS_KEY_PREFIX=$prefix
    export CMP_GATEWAY_URL=http://$sim_addr
    export CMP_GATEWAY_TIMEOUT_MS=1000
    export CMP_API_BIND=$api_addr
    export CMP_LOG=${CMP_LOG:-warn}
    "$bin/gateway-sim" serve --bind "$sim_addr" >"$logs/gateway-sim.log" 2>&1 &
    pids+=($!)
    "$bin/cmp-api" migrate >"$logs/migrate.log" 2>&1
    key=$("$bin/cmp-api" keys create --name fuzz --role admin | tail -n 1)
    "$bin/cmp-api" serve >"$logs/api.log" 2>&1 &
    pids+=($!)
    url=http://$api_addr
    for _ in $(seq 1 100); do
        curl -fsS "$url/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
fi

echo "api-fuzz: validating $url/api/openapi.json as OpenAPI 3.1"
curl -fsS "$url/api/openapi.json" >"$logs/openapi.json"
openapi-spec-validator "$logs/openapi.json"

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
# Carriers are fuzzed on their own, last (below): a generated carrier would send the API's
# operator stops and starts of its cards to whatever host it names, beyond this machine, and
# fail them there. `POST /carriers/{carrier_id}/test` (a call to the carrier's URL) is never
# fuzzed; bin-api's tests cover it against a closed port and gateway-sim.
common=(--url "$url" --header "Authorization: Bearer $key" --request-timeout 10 --workers 1
    --no-color)
not_carriers=(--exclude-path-regex '/carriers')
carriers_only=(--include-path-regex '/carriers' --exclude-path-regex '/carriers/[^/]+/test$')
carrier_secs=40

left=$(( deadline - $(date +%s) - stateful_secs - carrier_secs ))
echo "api-fuzz: $url, $examples examples per operation, at most $left s, then the stateful phase"
timeout "$left" schemathesis run "$url/api/openapi.json" "${common[@]}" "${not_carriers[@]}" \
    --checks "$checks" \
    --phases examples,coverage,fuzzing \
    --max-examples "$examples"

# The stateful phase: scenarios of linked calls until its time is spent (less 30 s for loading
# the document and the last scenario); its NDJSON report tells which steps followed a link.
left=$(( deadline - $(date +%s) - carrier_secs ))
budget=$(( stateful_secs < left ? stateful_secs : left ))
if [ "$budget" -lt 40 ]; then
    echo "api-fuzz: no time left for the stateful phase ($left s)" >&2
    exit 1
fi
rm -rf "$logs/report"
echo "api-fuzz: stateful phase, $budget s"
status=0
# Two checks more, which need a chain: a deleted resource answers 404 after, a created one is
# found after.
timeout "$left" schemathesis run "$url/api/openapi.json" "${common[@]}" "${not_carriers[@]}" \
    --checks "$checks,use_after_free,ensure_resource_availability" \
    --phases stateful \
    --max-time "$(( budget - 30 ))" \
    --report ndjson --report-dir "$logs/report" || status=$?
python3 scripts/api-fuzz-stateful.py "$logs/openapi.json" "$logs"/report/*.ndjson || status=1

echo "api-fuzz: the carrier routes, at most $carrier_secs s"
timeout "$carrier_secs" schemathesis run "$url/api/openapi.json" "${common[@]}" "${carriers_only[@]}" \
    --checks "$checks" \
    --phases examples,coverage,fuzzing \
    --max-examples "$examples" || status=$?
exit "$status"
