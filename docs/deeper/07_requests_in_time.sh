#!/usr/bin/env bash
# When did each request of a crawl leave? Runs a command under strace, for example, through chapter
# 07's slow proxy (every answer 100 ms late, so that one wave of requests is far from the next),
#
#     docs/deeper/07_requests_in_time.sh build/bin/crawl "${SLOW_URL}site/"
#
# and prints one row per burst of requests: the milliseconds since the first request was sent, then
# the paths sent in that burst (without their leading /site/). A row starts after each pause of
# over 20 ms between two requests. The command's own output is dropped.
set -euo pipefail
if [ $# -eq 0 ]; then
    echo "usage: $0 COMMAND [ARG]..." >&2
    exit 2
fi

# strace writes one line per send on stderr, "17:20:01.123456 sendto(5, "GET /site/about HTTP/1.1...";
# the command's stdout goes to /dev/null.
strace -tt -e trace=sendto "$@" 2>&1 >/dev/null | awk '
  BEGIN { printf "   ms  requests sent" }
  /GET / { split($1, t, ":"); ms = (t[1] * 3600 + t[2] * 60 + t[3]) * 1000
           if (n++ == 0) first = ms
           if (n == 1 || ms - last > 20) printf "\n%5.0f ", ms - first
           last = ms; match($0, /GET [^ ]*/); path = substr($0, RSTART + 4, RLENGTH - 4)
           if (path != "/site/") sub(/^\/site\//, "", path); printf " %s", path }
  END { print "" }'
