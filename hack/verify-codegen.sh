#!/usr/bin/env bash
# Regenerates into a scratch copy of the tree and fails if anything differs
# from what is checked in, without touching the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r go.mod go.sum apis pkg config hack "$tmp/"
(cd "$tmp" && BIN="$BIN" hack/update-codegen.sh)
status=0
for d in apis pkg/generated config/crd; do
  if ! diff -r "$d" "$tmp/$d" >/dev/null; then
    echo "generated files under $d are stale; run 'make generate':" >&2
    diff -r "$d" "$tmp/$d" | head -40 >&2 || true
    status=1
  fi
done
exit $status
