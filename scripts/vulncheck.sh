#!/usr/bin/env bash
# Runs govulncheck over both modules (the root module and bench/, tests
# included) against a vulnerability database built on this machine, since
# the machine reaches the Go module proxy but not vuln.go.dev.
#
# The database comes from the golang.org/x/vulndb module, which the proxy
# serves (pseudo-versions of its master branch): its data/osv directory
# holds the OSV JSON of every report, and its cmd/indexdb writes the v1
# database layout (index/db.json, index/modules.json, ID/<id>.json) that
# `govulncheck -db file://...` reads. The built database is cached under
# $XDG_CACHE_HOME/distlock/vulndb/<vulndb version> (default ~/.cache).
# The OSV files of that module carry no dates (the deployed database sets
# them from git history), so index/db.json's modified time is set to the
# vulndb commit time instead.
#
# Standard-library findings are about the Go toolchain running this script
# (go env GOVERSION): they are fixed by a newer toolchain, for example
# GOTOOLCHAIN=go1.26.11, not by a change to this repository.
#
# Usage: scripts/vulncheck.sh
#   GO=/path/to/go                      the go command (default go)
#   VULNDB_VERSION=v0.0.0-...           a vulndb version (default latest)
#   GOVULNCHECK_VERSION=v1.9.0          a govulncheck version (default latest)
# Exit status 0 when govulncheck finds no vulnerability the code calls in
# either module; otherwise its report, one line per failing module, and 1.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
go_cmd=${GO:-go}
vulndb_query=${VULNDB_VERSION:-latest}
scanner=golang.org/x/vuln/cmd/govulncheck@${GOVULNCHECK_VERSION:-latest}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/distlock/vulndb

say() { echo "vulncheck: $*" >&2; }

# The vulndb look-ups run outside both modules, so that they cannot touch
# go.mod or go.sum.
scratch=$(mktemp -d)
build=
trap 'rm -rf "$scratch" $build' EXIT
outside() { (cd "$scratch" && GOWORK=off "$go_cmd" "$@"); }

read -r version modified < <(outside list -m -f '{{.Version}} {{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' "golang.org/x/vulndb@$vulndb_query") ||
  { say "FAIL: cannot resolve golang.org/x/vulndb@$vulndb_query through the module proxy ($("$go_cmd" env GOPROXY))"; exit 1; }
db=$cache/$version

if [ ! -s "$db/index/db.json" ]; then
  src=$(outside mod download -json "golang.org/x/vulndb@$version" | awk -F'"' '$2 == "Dir" { print $4 }')
  if [ ! -d "$src/data/osv" ]; then
    say "FAIL: golang.org/x/vulndb@$version has no data/osv directory"
    exit 1
  fi
  say "building the database from golang.org/x/vulndb@$version ($(find "$src/data/osv" -name '*.json' | wc -l) reports)"
  # Built beside its final place and renamed, so an interrupted build
  # never leaves a database that looks complete.
  mkdir -p "$cache"
  build=$(mktemp -d "$cache/.build.XXXXXX")
  outside run "golang.org/x/vulndb/cmd/indexdb@$version" -vulns "$src/data/osv" -out "$build/db" ||
    { say "FAIL: golang.org/x/vulndb/cmd/indexdb@$version could not build the database"; exit 1; }
  printf '{"modified":"%s"}' "$modified" >"$build/db/index/db.json"
  gzip -c "$build/db/index/db.json" >"$build/db/index/db.json.gz"
  rm -rf "$db"
  mv "$build/db" "$db"
fi

# Installed rather than run with go run, which turns govulncheck's exit
# status 3 (vulnerabilities found) into 1. govulncheck loads packages with
# the go command first on PATH, so that is the one GO names.
GOBIN=$scratch outside install "$scanner" ||
  { say "FAIL: cannot install $scanner through the module proxy"; exit 1; }
PATH=$(dirname "$(command -v "$go_cmd")"):$PATH
say "golang.org/x/vulndb@$version (updated $modified), $("$scratch/govulncheck" -version | awk '/^Scanner:/ { print $2 }'), $("$go_cmd" env GOVERSION)"
failed=0
for dir in . bench; do
  rc=0
  (cd "$root/$dir" && "$scratch/govulncheck" -db "file://$db" -test ./...) || rc=$?
  case $rc in
  0) ;;
  3)
    say "FAIL: govulncheck found vulnerabilities the code calls in module $dir (a standard-library one is fixed by the newer Go toolchain its 'Fixed in' names, a module's by requiring its fixed version)"
    failed=1
    ;;
  *)
    say "FAIL: govulncheck could not scan module $dir (exit status $rc)"
    failed=1
    ;;
  esac
done
[ "$failed" = 0 ] && say "ok: no vulnerability the code calls"
exit "$failed"
