#!/usr/bin/env bash
# Builds what it runs (the six stages, the yardstick, the lab server and the compare tool, in the
# Release preset), then runs build/bin/compare: it starts a lab server on a free port (every answer
# waits 100 ms), runs every stage against it for each request count given (default: 10 100 1000),
# and prints one table of them all. The CSV and the plot go to build/results/.
#   lab/quickstart.sh [N ...]
# The build's output goes to build/quickstart.log; if the build fails, the script says so, shows
# the log's last lines and exits 1. On a terminal it says on stderr what it is doing at each step;
# in a pipe or a file it prints only the table (and compare's notes).
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

# What compare runs (it finds them next to itself, in build/bin/), and compare itself; and what the
# chapters run by hand before their exercises: the tiny versions, chapter 01's naive fetch, chapter
# 04's race test, chapter 05's first generator and hook tracer, chapter 06's nested deadlines and
# chapter 07's crawler. The other tests, the benchmarks and the solutions are left for
# `cmake --workflow --preset test`.
targets=(labserver compare yardstick
         01_blocking 02_threads 03_nonblocking 04_callbacks 05_generators 06_coroutines
         01_tiny 02_tiny 03_tiny 04_tiny 05_tiny 06_tiny crawl
         solution_01_naive solution_04_tests solution_05_count_to_three solution_05_hook_tracer
         solution_06_deadlines)
log=$PWD/build/quickstart.log
mkdir -p build

say "building ${targets[*]} (Release); the first build takes a few minutes; log: $log"
if ! { cmake --preset release && cmake --build --preset release --target "${targets[@]}"; } \
        >"$log" 2>&1; then
    echo "quickstart: the build failed; the whole log is $log, its last lines:" >&2
    tail -n 20 "$log" >&2
    exit 1
fi
say "comparing the stages at N = ${counts[*]} (build/bin/compare; its progress follows)"
exec build/bin/compare "${counts[@]}" --out build/results
