#!/usr/bin/env bash
# Counts the instructions each program runs in user space for one request, with callgrind: each
# program fetches once, then N + 1 times, from a lab server that answers at once (100 requests in
# flight), and the difference is divided by N, so that start-up and the report's fixed costs drop
# out. A time moves by tens of percent from one run to the next on a busy machine; this count moves
# by a percent or two (03_nonblocking's a little more: its loop polls as often as it finds nothing),
# so it shows what a change to the code saves. The kernel's work, the system calls themselves, is
# not in it: callgrind sees user space only.
#   bench/instructions.sh [N]     (default 5000; needs valgrind and the Release build in build/)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,9s/^# \{0,1\}//p' "$0"
    exit 0
fi
n=${1:-5000}
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
    echo "bench/instructions.sh: N must be a whole number above 0, not '$n' (try --help)" >&2
    exit 2
fi
if ! command -v valgrind >/dev/null; then
    echo "bench/instructions.sh: needs valgrind (Debian: apt-get install valgrind)" >&2
    exit 2
fi
if ! [ -x build/bin/labserver ]; then
    echo "bench/instructions.sh: no build/bin/labserver; build first:" \
         "cmake --preset release && cmake --build --preset release" >&2
    exit 2
fi

# The server on a free port; its first line says which ("listening on http://127.0.0.1:PORT/ ...").
server_log=$(mktemp)
build/bin/labserver --host 127.0.0.1 --port 0 --delay 0 >"$server_log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -f "$server_log"' EXIT
url=
for _ in $(seq 50); do
    url=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$server_log")
    [ -n "$url" ] && break
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "bench/instructions.sh: the lab server did not start:" >&2
    cat "$server_log" >&2
    exit 1
fi

# count PROGRAM REQUESTS: the instructions PROGRAM ran, start-up included. Every request must
# succeed, or the count is not of what we mean to measure.
count() {
    local output
    if ! output=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
                      "build/bin/$1" "$2" --url "$url" --concurrency 100 2>&1 >/dev/null); then
        echo "bench/instructions.sh: $1 $2 failed:" >&2
        echo "$output" | grep -v '^==' >&2
        exit 1
    fi
    echo "$output" | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

echo "Instructions in user space per request, $n requests from $url, 100 in flight:"
echo
echo "| program | instructions per request |"
echo "|---|--:|"
for program in yardstick 01_blocking 02_threads 03_nonblocking 04_callbacks 05_generators \
               06_coroutines; do
    echo "  $program..." >&2
    one=$(count "$program" 1)
    many=$(count "$program" $((n + 1)))
    printf '| %s | %d |\n' "$program" $(((many - one) / n))
done
