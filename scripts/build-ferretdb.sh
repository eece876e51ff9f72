#!/usr/bin/env bash
# Builds the lab's FerretDB (tests/ferretdb: a small program on FerretDB's embeddable Go package) into
# .lab/ferretdb/bin/ferretdb-lab, and does nothing when the binary there was built from the same sources
# (main.go, go.mod, go.sum) with the same Go. Everything Go writes stays under .lab/ferretdb: the module cache,
# the build cache, its temporary files and its configuration (telemetry counters included).
#
#   scripts/build-ferretdb.sh            build if needed; prints the binary's path last
#   scripts/build-ferretdb.sh --check    exit 0 when the binary is current, 1 when a build is needed, 2 without Go
#
# Without Go (1.24 or newer) it says so and exits 2; the FerretDB tests then skip, naming the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
src="$root/tests/ferretdb"
cache="$root/.lab/ferretdb"
bin="$cache/bin/ferretdb-lab"
stamp="$cache/bin/.source.sha256"

go=${GO:-$(command -v go || true)}
if [ -z "$go" ] && [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go; fi
if [ -z "$go" ]; then
  echo "build-ferretdb: Go is not installed (1.24 or newer builds FerretDB); the FerretDB tests will skip" >&2
  exit 2
fi

# The machine's proxy and checksum settings (environment or `go env -w`) still apply; the rest is the checkout's.
for name in GOPROXY GOSUMDB GONOSUMDB GOPRIVATE GONOPROXY GOINSECURE; do
  value=$("$go" env "$name" 2>/dev/null || true)
  [ -z "$value" ] || export "$name=$value"
done
export GOPATH="$cache/gopath" GOMODCACHE="$cache/gopath/pkg/mod" GOCACHE="$cache/gocache" GOTMPDIR="$cache/tmp"
export XDG_CONFIG_HOME="$cache/config" GOENV=off GOTOOLCHAIN=local GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
mkdir -p "$GOTMPDIR" "$XDG_CONFIG_HOME" "$cache/bin"

if ! version=$("$go" env GOVERSION 2>/dev/null) || ! "$go" list -C "$src" -m >/dev/null 2>&1; then
  echo "build-ferretdb: $go cannot build tests/ferretdb ($("$go" version 2>&1 || true)); 1.24 or newer is needed" >&2
  exit 2
fi
want=$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -d' ' -f1)
want="$want $version"
current=false
[ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && current=true
if [ "${1:-}" = "--check" ]; then
  $current && exit 0
  exit 1
fi
if ! $current; then
  echo "build-ferretdb: building FerretDB with $version (a few minutes on a cold cache)" >&2
  start=$SECONDS
  "$go" build -C "$src" -o "$bin.partial" .
  mv -f "$bin.partial" "$bin"
  echo "$want" >"$stamp"
  echo "build-ferretdb: built in $((SECONDS - start)) s" >&2
fi
echo "$bin"
