#!/usr/bin/env bash
# Builds the Release preset, then runs build/bin/compare: it starts a lab server on a free port
# (every answer waits 100 ms), runs every stage against it for each request count given (default:
# 10 100 1000), and prints one table of them all. The CSV and the plot go to build/results/.
#   lab/quickstart.sh [N ...]
set -euo pipefail
cd "$(dirname "$0")/.."

cmake --preset release >/dev/null
cmake --build --preset release

counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(10 100 1000)
exec build/bin/compare "${counts[@]}" --out build/results
