# The test command of README.md: builds the server images from Debian
# packages (no container registry on this machine kind), then runs go vet,
# the race detector and every test, containers included. The container
# tests reach the Docker daemon at /var/run/docker.sock, or where
# DOCKER_HOST (unix:// or tcp://) says.

export DISTLOCK_REDIS_IMAGE ?= distlock/redis:7.0-bookworm
export DISTLOCK_POSTGRES_IMAGE ?= distlock/postgres:15-bookworm
export DISTLOCK_ETCD_IMAGE ?= distlock/etcd:3.4-bookworm
export DISTLOCK_ZOOKEEPER_IMAGE ?= distlock/zookeeper:3.8-bookworm

GO ?= go

.PHONY: test test-short images example bench bench-table vet depcheck clean-containers

# -p 1: one package at a time. The container tests measure timeouts of
# tens of milliseconds (Redlock's node timeout is 50 ms); two such packages
# under -race on 2 cores starve each other into spurious timeouts.
test: images vet clean-containers
	DISTLOCK_REQUIRE_DOCKER=1 $(GO) test -race -count=1 -p 1 -timeout 40m ./...
	# Benchmarks once each as a smoke test, plus the bench module's tests
	# (mixed redsync/redlock clients). No race detector here: it slows the
	# five-node benchmarks past Redlock's 50 ms node timeout on 2 cores;
	# the library's own tests above run with it.
	cd bench && DISTLOCK_REQUIRE_DOCKER=1 $(GO) test -count=1 -run . -bench . -benchtime 1x -timeout 20m ./...
	$(MAKE) --no-print-directory test-oldest
	$(MAKE) --no-print-directory vulncheck

vet: depcheck
	test -z "$$(gofmt -l . | tee /dev/stderr)"
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# A program importing distlock/all or distlock/conformance must list no
# testcontainers, docker, moby or containerd module in its go.sum: builds a
# scratch module that imports both (scripts/depcheck.sh).
depcheck:
	GO=$(GO) bash scripts/depcheck.sh

# Containers, networks and volumes an earlier, interrupted run left behind (every
# testbed object carries the io.distlock.testbed label) would steal CPU
# from this run's timing-sensitive tests.
clean-containers:
	@ids=$$(docker ps -aq --filter label=io.distlock.testbed); [ -z "$$ids" ] || docker rm -fv $$ids >/dev/null
	@nets=$$(docker network ls -q --filter label=io.distlock.testbed); [ -z "$$nets" ] || docker network rm $$nets >/dev/null
	@vols=$$(docker volume ls -q --filter label=io.distlock.testbed); [ -z "$$vols" ] || docker volume rm $$vols >/dev/null

# The oldest supported Go: build, vet and the short tests with the toolchain
# go.mod's go line names (downloaded through the module proxy on first use;
# scripts/oldest-go.sh). No containers, no race detector.
.PHONY: test-oldest
test-oldest:
	GO="$(GO)" bash scripts/oldest-go.sh

# Known vulnerabilities the code of either module calls (govulncheck with
# a database built from the golang.org/x/vulndb module, which the module
# proxy serves; scripts/vulncheck.sh). Standard-library findings belong to
# the toolchain a program is built with, not to this repository: the scan
# runs under VULNCHECK_GO, a patch release of the supported Go with the
# standard library's fixes (fetched through the module proxy), so that a
# finding fails here only when it is in the library's own dependencies
# or a fix needs a newer Go than VULNCHECK_GO.
VULNCHECK_GO ?= go1.26.11
.PHONY: vulncheck
vulncheck:
	GOTOOLCHAIN=$(VULNCHECK_GO) GO="$(GO)" bash scripts/vulncheck.sh

# Fast local loop: no containers, no images.
test-short:
	$(GO) test -short -race -count=1 ./...

images:
	bash scripts/images.sh

example:
	$(GO) run ./cmd/distlock-example

bench: images
	cd bench && $(GO) test -run '^$$' -bench . -count 5 -timeout 60m ./...

# The figures table of docs/benchmarks.md: runs the bench module's
# benchmarks BENCH_COUNT times (default 2) and writes the medians of their
# ratios and counts between the table's markers (scripts/bench-table.sh).
# Needs the images (make images).
bench-table:
	bash scripts/bench-table.sh
