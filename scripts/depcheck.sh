#!/usr/bin/env bash
# Checks that a program importing the library drags in no container
# tooling: a scratch module in a temporary directory imports
# github.com/distlock/distlock/all and .../conformance (users may import the
# suite), with a replace directive to this repository, runs `go mod tidy`
# and `go build`, and fails listing every go.sum line that names
# testcontainers, docker, moby or containerd. `go mod tidy` records the
# checksums of the test imports of the imported packages too, so the
# backends' tests (which import testbed) count.
#
# Usage: scripts/depcheck.sh   (GO overrides the go command)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
work=$(mktemp -d "${TMPDIR:-/tmp}/distlock-depcheck.XXXXXX")
trap 'rm -rf "$work"' EXIT

goversion=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$repo/go.mod")
cat >"$work/go.mod" <<EOF
module example.com/depcheck

go $goversion

require github.com/distlock/distlock v0.0.0

replace github.com/distlock/distlock => $repo
EOF
cat >"$work/main.go" <<'EOF'
package main

import (
	_ "github.com/distlock/distlock/all"
	_ "github.com/distlock/distlock/conformance"
)

func main() {}
EOF

(cd "$work" && "$go" mod tidy && "$go" build -o /dev/null .)

if bad=$(grep -E 'testcontainers|docker|moby|containerd' "$work/go.sum"); then
  echo "depcheck: go.sum of a module importing distlock/all and distlock/conformance lists container tooling:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "depcheck: ok ($(wc -l <"$work/go.sum") go.sum lines, none for testcontainers, docker, moby or containerd)"
