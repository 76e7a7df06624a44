#!/usr/bin/env bash
# Runs chapter 07's two scripts as the chapter does, against a lab server of its own, and checks what
# they print: the timeline of a crawl's requests through the slow proxy has the root alone in its
# first row and names each of the site's 32 URLs once, and a crawl through the proxy finds the same
# 32 URLs.
#
#     tests/docs_07_scripts.sh BIN_DIR     (from the repository's top folder; BIN_DIR holds crawl
#                                           and labserver)
#
# Exits 77 (skipped) when strace cannot trace here, as in a container that forbids ptrace.
set -euo pipefail
bin=$1
if ! strace -o /dev/null true 2>/dev/null; then
    echo "strace cannot run here: skipped"
    exit 77
fi

work=$(mktemp -d)
lab=
slow=
cleanup() {
    [ -n "$slow" ] && kill "$slow" 2>/dev/null
    [ -n "$lab" ] && kill "$lab" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $1" >&2
    exit 1
}

# The lab server prints "listening on http://127.0.0.1:PORT/ ..." once it listens.
mkfifo "$work/line"
"$bin/labserver" --host 127.0.0.1 --port 0 --delay 0 > "$work/line" 2> "$work/labserver.log" &
lab=$!
URL=
read -r -t 10 _ _ URL _ < "$work/line" || true
[ -n "$URL" ] || fail "the lab server did not start"

# shellcheck source=/dev/null
source docs/deeper/07_slow_site.sh > /dev/null || fail "the slow proxy did not start"
slow=$SLOW

# Through the proxy, as the chapter runs it: every answer is 100 ms late, so the root, alone, is the
# first row. Under AddressSanitizer, its leak check cannot run beneath strace (it needs ptrace).
timeline=$(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    timeout 60 docs/deeper/07_requests_in_time.sh "$bin/crawl" "${SLOW_URL}site/")
echo "$timeline"
first_row=$(echo "$timeline" | sed -n 2p)
[ "$(echo $first_row)" = "0 /site/" ] || fail "the timeline's first row is '$first_row', not '0 /site/'"
paths=$(echo "$timeline" | tail -n +2 | awk '{ for (i = 2; i <= NF; ++i) print $i }')
[ "$(echo "$paths" | wc -l)" -eq 32 ] || fail "the timeline names $(echo "$paths" | wc -l) requests, not 32"
[ "$(echo "$paths" | sort -u | wc -l)" -eq 32 ] || fail "the timeline names a URL twice"

report=$(timeout 60 "$bin/crawl" "${SLOW_URL}site/" --max-tasks 10 | tail -3)
echo "$report"
echo "$report" | grep -q "^Finished 32 URLs" || fail "the crawl through the slow proxy did not finish 32 URLs"
echo "$report" | grep -qx "Failed: 0" || fail "the crawl through the slow proxy had failures"
echo "ok"
