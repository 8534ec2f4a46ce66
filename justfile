# The polling core's commands. `just` lists them; CI runs `just lint` and `just test`.

set shell := ["bash", "-euo", "pipefail", "-c"]

default:
    @just --list

# Run every unit and integration test against real PostgreSQL and Redis
# (CMP_TEST_DATABASE_URL / CMP_TEST_REDIS_URL, else testcontainers with Docker).
test *args:
    if cargo nextest --version >/dev/null 2>&1; then \
        cargo nextest run --workspace --no-fail-fast {{args}}; \
    else \
        cargo test --workspace --no-fail-fast {{args}}; \
    fi

# The Redis-touching suites (polling-queue, polling-config, lifecycle, scheduler, worker
# end-to-end, test-support) on a three-master Redis Cluster (CMP_TEST_REDIS_CLUSTER_URL, else
# one started on 7101-7103); fails on any CROSSSLOT in the output or in the nodes' errorstats.
test-cluster *args:
    scripts/test-cluster.sh {{args}}

# A local Redis Cluster: `just cluster start|stop|status|url [--replicas N] PORTS...`
# (default: three masters on 7101-7103, the one CI and test-cluster use).
cluster cmd="start" *ports="7101 7102 7103":
    scripts/redis-cluster.sh {{cmd}} {{ports}}

# Formatting, clippy with warnings as errors, and the dependency rules of docs/architecture.md.
lint: fmt-check clippy deps-check docs-check

fmt-check:
    cargo fmt --all -- --check

clippy:
    cargo clippy --workspace --all-targets -- -D warnings

# The crate table of docs/architecture.md: who may depend on whom, what no crate may reach or
# name (`lifecycle` never names `fred`, `admin` never reaches `utoipa` or `axum`, ...).
deps-check:
    python3 scripts/deps-check.py

# No tracked file points at documents the repository does not hold (design files outside it,
# specification seed numbers, issue numbers): code and docs cite docs/rules.md,
# docs/contract.md, docs/architecture.md and docs/invariants.md.
docs-check:
    python3 scripts/docs-check.py

# The Kubernetes manifests (deploy/k8s) against the Kubernetes schemas and the compose file
# (deploy/compose) against the compose specification, offline (validators from PyPI, installed
# into a venv on first use); docs/deploy.md.
deploy-check:
    scripts/deploy-check.sh

# Several hosts on this machine in network namespaces (run as root): two cmp-api replicas behind
# HAProxy, worker hosts, a Redis Cluster of 3 masters + 3 replicas, PostgreSQL and gateway-sim on
# hosts of their own; rolling restart, link cut, partitions, failover, PostgreSQL restart,
# scale-out (1 -> 3 hosts gated at 2.7x; 2.0x with --ci, every other criterion the same).
# A table of figures; `just hosts-test --ci` is the short version CI runs (about 6 minutes).
hosts-test *args:
    python3 scripts/hosts-test {{args}}

# Start PostgreSQL and Redis in Docker (for machines without local services).
up:
    docker compose up -d postgres redis

# Build release binaries.
build:
    cargo build --release --bins

# Run it: a fresh fleet of 100,000 cards polled live against gateway-sim (Ctrl-C to stop).
# `just demo --cluster` runs it on a local three-master Redis Cluster (ports 7131-7133);
# `just demo --carriers mixed` spreads the fleet over six carriers, one per protocol.
demo *args:
    scripts/demo.sh {{args}}

# The dashboard's browser test in headless Chromium (needs node, npm and /usr/bin/chromium):
# real gateway-sim, cmp-worker and cmp-api on a seeded fleet; screenshots in target/ui-screenshots/.
ui-test:
    scripts/ui-test.sh

# Property-based run of schemathesis against cmp-api (its own, or CMP_FUZZ_URL + CMP_FUZZ_KEY):
# no 5xx, every answer as /api/openapi.json documents, each operation alone and then in chains
# along the document's links (stateful phase). CMP_FUZZ_EXAMPLES, CMP_FUZZ_SECS bound it.
api-fuzz:
    scripts/api-fuzz.sh

# Real cmp-worker, cmp-api and gateway-sim against a private PostgreSQL cluster and Redis server
# (ports 27000-27999), one fault per scenario (SIGKILL, Redis lost, PostgreSQL restart, carrier
# faults with and without a quota, clock skew, API load), then each cargo-fuzz target for 60 s.
# Options: --only s1,s4, --release, --cards N, --fuzz-secs S (0: no fuzzing; --only and --ci
# fuzz only when given it), --strict (known gaps fail too).
# The fault suite: a table and target/chaos/report.json; `just chaos --ci` is the short version CI runs.
chaos *args:
    python3 scripts/chaos {{args}}

# RSS of worker and API at start and end, due backlog sampled, check at the end;
# `just soak --soak-mins 5 --soak-cards 5000` for less.
# A 30-minute soak of a steady fleet (release build; not in CI).
soak *args:
    python3 scripts/chaos --only soak --release {{args}}

# The performance figures (release build; about 5 minutes on 2 cores): a table, and
# target/bench/report.json. `just bench --cards 10000000` for the full fleet; --only, --keep;
# --redis-cluster adds dequeue and full cycle on a three-master cluster next to the single Redis.
bench *args:
    cargo run --release -p bench -- {{args}}

# The same scenarios with small sizes (about a minute), for use during development.
bench-quick *args:
    cargo run --release -p bench -- --quick {{args}}
