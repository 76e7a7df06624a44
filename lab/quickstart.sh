#!/usr/bin/env bash
# Builds the Release preset, then runs build/bin/compare: it starts a lab server on a free port
# (every answer waits 100 ms), runs every stage against it for each request count given (default:
# 10 100 1000), and prints one table of them all. The CSV and the plot go to build/results/.
#   lab/quickstart.sh [N ...]
# On a terminal it says on stderr what it is doing at each step; in a pipe or a file it says nothing
# of its own (the build and compare print what they print).
set -euo pipefail
cd "$(dirname "$0")/.."

# One line on stderr, only when stderr is a terminal.
say() {
    if [ -t 2 ]; then
        echo "quickstart: $*" >&2
    fi
}

counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(10 100 1000)

say "configuring the Release build in build/ (cmake --preset release)"
cmake --preset release >/dev/null
say "building (cmake --build --preset release); the first build takes a few minutes"
cmake --build --preset release
say "comparing the stages at N = ${counts[*]} (build/bin/compare; its progress follows)"
exec build/bin/compare "${counts[@]}" --out build/results
