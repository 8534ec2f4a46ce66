#!/usr/bin/env bash
# `just deploy-check`: what operators deploy with, checked offline against the published schemas.
#   deploy/k8s/*.yaml          kubernetes-validate --strict (PyPI; it ships the Kubernetes
#                              schemas), every file named in kustomization.yaml and no other
#   deploy/compose/*.yml       check-jsonschema against the compose specification it ships
#                              (vendor.compose-spec), and haproxy -c on the balancer's config
#                              when HAProxy is installed
#   deploy/prometheus/         promtool check rules alerts.yml, promtool test rules
#                              alerts.test.yml, promtool check config prometheus.compose.yml
#                              (Debian's `prometheus` package, installed with apt-get when
#                              promtool is missing)
#   deploy/grafana/*.json      valid JSON, every query parsed by promtool
#   both                       every metric they query is one the binaries export
#                              (scripts/metrics-check.py, over the Rust source)
# The two validators are installed from PyPI into a venv of their own
# (${CMP_DEPLOY_VENV:-/var/tmp/cmp-deploy-venv}) on first use.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${CMP_DEPLOY_VENV:-/var/tmp/cmp-deploy-venv}
if ! "$venv/bin/kubernetes-validate" --version >/dev/null 2>&1 \
    || ! "$venv/bin/check-jsonschema" --version >/dev/null 2>&1; then
    echo "deploy-check: installing kubernetes-validate and check-jsonschema into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet kubernetes-validate check-jsonschema
fi

fail=0
listed=$(sed -n '/^resources:/,/^[a-z]/p' deploy/k8s/kustomization.yaml | sed -n 's/^  - //p')
for f in deploy/k8s/*.yaml; do
    b=$(basename "$f")
    [ "$b" = kustomization.yaml ] && continue
    if ! grep -qx "$b" <<<"$listed"; then
        echo "deploy-check: $f is not listed in deploy/k8s/kustomization.yaml" >&2
        fail=1
    fi
done
for b in $listed; do
    [ -f "deploy/k8s/$b" ] || { echo "deploy-check: kustomization.yaml names missing $b" >&2; fail=1; }
done
# Every variable the manifests set must be one the binaries read (crates/settings).
for v in $(grep -ohE '\bCMP_[A-Z_]+' deploy/k8s/*.yaml deploy/compose/docker-compose.yml | sort -u); do
    case $v in CMP_POSTGRES_PASSWORD) continue ;; esac
    if ! grep -q "\"$v\"" crates/settings/src/lib.rs; then
        echo "deploy-check: $v is not a setting of crates/settings" >&2
        fail=1
    fi
done

k8s=()
for b in $listed; do k8s+=("deploy/k8s/$b"); done
"$venv/bin/kubernetes-validate" --strict --quiet "${k8s[@]}" || fail=1
"$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec deploy/compose/docker-compose.yml || fail=1
if command -v haproxy >/dev/null 2>&1; then
    haproxy -c -q -f deploy/compose/haproxy.cfg || fail=1
fi

# Prometheus rules and their unit tests, the Grafana dashboards' queries, and the metric names
# of both against what the binaries export.
if ! command -v promtool >/dev/null 2>&1; then
    echo "deploy-check: installing promtool (Debian's prometheus package)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq prometheus >/dev/null
fi
promtool check rules deploy/prometheus/alerts.yml || fail=1
promtool check config deploy/prometheus/prometheus.compose.yml >/dev/null || fail=1
(cd deploy/prometheus && promtool test rules alerts.test.yml) || fail=1
dashboard_rules=$(mktemp --suffix=.yml)
trap 'rm -f "$dashboard_rules"' EXIT
if "$venv/bin/python3" scripts/metrics-check.py --dashboard-rules "$dashboard_rules"; then
    promtool check rules "$dashboard_rules" >/dev/null || {
        promtool check rules "$dashboard_rules" >&2 || true
        echo "deploy-check: a query of deploy/grafana/*.json does not parse (above)" >&2
        fail=1
    }
else
    echo "deploy-check: deploy/grafana/*.json could not be read" >&2
    fail=1
fi
"$venv/bin/python3" scripts/metrics-check.py || fail=1

if [ "$fail" != 0 ]; then
    echo "deploy-check: FAILED" >&2
    exit 1
fi
echo "deploy-check: ${#k8s[@]} Kubernetes manifests, the compose file, the Prometheus rules and the Grafana dashboard are valid"
