#!/usr/bin/env bash
# tests/bench/run.sh -- `make bench`: every benchmark, figures and ratios.
set -eu
O=${O:-.output}
cd "$(dirname "$0")/../.."
for b in "$O"/tests/bench/bench-*; do
	[ -x "$b" ] || continue
	echo "== $(basename "$b")"
	"$b"
done
