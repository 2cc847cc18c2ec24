#!/usr/bin/env bash
# Runs the bench module's benchmarks and writes their ratio and count
# figures (medians over BENCH_COUNT repetitions) into the table of
# docs/benchmarks.md, between its bench-table markers.
#
# Benchmarks whose b.N is a number of operations run with
# -benchtime ${BENCH_N}x; the ones that size themselves (rounds of a fixed
# duration or a fixed number of locks, documented "Run with -benchtime=1x")
# run with -benchtime 1x. The images must be built (make images).
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BENCH_COUNT:=2}"
: "${BENCH_N:=100}"
export DISTLOCK_REQUIRE_DOCKER=1
export DISTLOCK_REDIS_IMAGE="${DISTLOCK_REDIS_IMAGE:-distlock/redis:7.0-bookworm}"
export DISTLOCK_POSTGRES_IMAGE="${DISTLOCK_POSTGRES_IMAGE:-distlock/postgres:15-bookworm}"
export DISTLOCK_ETCD_IMAGE="${DISTLOCK_ETCD_IMAGE:-distlock/etcd:3.4-bookworm}"
export DISTLOCK_ZOOKEEPER_IMAGE="${DISTLOCK_ZOOKEEPER_IMAGE:-distlock/zookeeper:3.8-bookworm}"

per_op='^Benchmark(B1Uncontended|B2Handoff|B7Herd|EtcdB1Uncontended|EtcdB2Handoff|MigrateB1Uncontended|MigrateB2Handoff|ZKB1Uncontended|ZKB2Handoff)$'
sized='^Benchmark(B5Memory|EtcdB3OneKey|EtcdB5State|PGB1Uncontended|PGB2Handoff|PGB4ManyKeys|Redlock.*|ZKB5Nodes)$'

# A benchmark that fails (a server too slow for a client timeout on a
# loaded machine) leaves the others' figures: the table is written from
# whatever passed, lists what failed, and the script exits non-zero.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
(
	cd bench
	go test -run '^$' -bench "$per_op" -benchtime "${BENCH_N}x" -count "$BENCH_COUNT" -timeout 60m .
	a=$?
	go test -run '^$' -bench "$sized" -benchtime 1x -count "$BENCH_COUNT" -timeout 60m .
	exit $((a || $?))
) | tee "$out"
status=${PIPESTATUS[0]}
set -e
go run ./scripts/benchtable -doc docs/benchmarks.md \
	-cmd "make bench-table (BENCH_COUNT=$BENCH_COUNT BENCH_N=$BENCH_N)" <"$out"
exit "$status"
