#!/usr/bin/env bash
# Builds the Release preset, starts a lab server on a free port, and runs every stage against it for
# each request count given (default: 10 100 1000), one report line per stage, side by side.
#   lab/quickstart.sh [N ...]
set -euo pipefail
cd "$(dirname "$0")/.."

cmake --preset release >/dev/null
cmake --build --preset release

counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(10 100 1000)
for n in "${counts[@]}"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "quickstart: N must be a whole number, not '$n'" >&2; exit 2; }
done

delay_ms=100
out=$(mktemp)
build/bin/labserver --port 0 --delay ${delay_ms}ms >"$out" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$out" | head -n 1)
[ -n "$url" ] || { echo "quickstart: the lab server did not start" >&2; exit 1; }
echo "lab server: $url (every answer waits ${delay_ms} ms)"

for n in "${counts[@]}"; do
  echo
  echo "N = $n"
  for stage in build/bin/0[1-6]_*; do
    name=$(basename "$stage")
    # One request after another costs N x delay: skip what would take more than 20 seconds.
    if [ "$name" = 01_blocking ] && [ "$n" -gt 200 ]; then
      echo "$name: skipped (one at a time would take about $((n * delay_ms / 1000)) s)"
      continue
    fi
    "$stage" "$n" --url "$url" || true   # exit 1 means some requests failed: the report says which
  done
done
