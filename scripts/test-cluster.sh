#!/usr/bin/env bash
# `just test-cluster`: the Redis-touching suites (polling-queue, polling-config, lifecycle,
# scheduler, the worker end-to-end tests, test-support) against a three-master Redis Cluster,
# then the check that nothing anywhere hit CROSSSLOT:
#   * the tests' whole output (every test's, passing or not) must not contain CROSSSLOT;
#   * no cluster node may have answered a CROSSSLOT error meanwhile (INFO errorstats, counted
#     before and after, so that earlier runs on the same cluster do not count).
# The cluster is CMP_TEST_REDIS_CLUSTER_URL's when set, else scripts/redis-cluster.sh on
# 7101-7103 (started when absent, left running for the next run).
set -euo pipefail
cd "$(dirname "$0")/.."

ports=(${CMP_TEST_CLUSTER_PORTS:-7101 7102 7103})
if [ -z "${CMP_TEST_REDIS_CLUSTER_URL:-}" ]; then
    scripts/redis-cluster.sh start "${ports[@]}"
    CMP_TEST_REDIS_CLUSTER_URL=$(scripts/redis-cluster.sh url "${ports[@]}")
fi
export CMP_TEST_REDIS_CLUSTER_URL
export CMP_TEST_REDIS_URL=$CMP_TEST_REDIS_CLUSTER_URL

# host:port of every node named in the URL.
nodes=$(sed -E 's#^[a-z-]+://([^?]*)\??#\1\&#; s#node=##g' <<<"$CMP_TEST_REDIS_CLUSTER_URL" | tr '&' '\n' | sed '/^$/d')
crossslot_errors() {
    local total=0 n
    for node in $nodes; do
        n=$(redis-cli -h "${node%:*}" -p "${node#*:}" info errorstats 2>/dev/null | tr -d '\r' |
            sed -nE 's/^errorstat_CROSSSLOT:count=([0-9]+).*/\1/p')
        total=$((total + ${n:-0}))
    done
    echo "$total"
}

log=${CARGO_TARGET_DIR:-target}/test-cluster.log
mkdir -p "$(dirname "$log")"
before=$(crossslot_errors)
status=0
# --workspace with a filter: the same build as `just test` (a -p subset unifies features
# differently and rebuilds dependencies). The failover test runs in `just test` on its own
# cluster; here it would only run twice.
suites='package(polling-queue) | package(polling-config) | package(lifecycle) | package(scheduler) | package(cmp-worker) | package(test-support)'
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast --success-output final --failure-output final \
        -E "($suites) & not binary(failover)" "$@" 2>&1 | tee "$log" || status=$?
else
    cargo test --no-fail-fast -p polling-queue -p polling-config -p lifecycle -p scheduler \
        -p cmp-worker -p test-support "$@" -- --nocapture 2>&1 | tee "$log" || status=$?
fi
after=$(crossslot_errors)

if grep -q CROSSSLOT "$log"; then
    echo "test-cluster: CROSSSLOT in the test output ($log):" >&2
    grep -n CROSSSLOT "$log" | head -n 20 >&2
    status=1
fi
if [ "$after" -gt "$before" ]; then
    echo "test-cluster: the cluster answered $((after - before)) CROSSSLOT error(s) during the run" >&2
    status=1
fi
[ "$status" -eq 0 ] && echo "test-cluster: green on $CMP_TEST_REDIS_CLUSTER_URL, no CROSSSLOT"
exit "$status"
