# Starts the slow proxy of chapter 07 in front of the lab server, from the repository's top folder,
# in bash, once lab/env.sh has set URL:
#
#     source docs/deeper/07_slow_site.sh
#
# It sets SLOW_URL, the proxy's address (every answer 100 ms late), and SLOW, its process id;
# `kill $SLOW` stops it. Sourced, as lab/env.sh is, so that it can set variables in your shell.

if [ -z "${URL:-}" ]; then
    echo "07_slow_site.sh: no URL; source lab/env.sh first" >&2
    return 1
fi
# The proxy prints "listening on http://127.0.0.1:PORT/ ..." once it listens; a named pipe hands
# that line to `read`, which waits for it.
slow_site_dir=$(mktemp -d) && mkfifo "$slow_site_dir/line" || return 1
python3 docs/deeper/07_slow_site.py "$URL" > "$slow_site_dir/line" &
SLOW=$!
SLOW_URL=
read -r -t 10 _ _ SLOW_URL _ < "$slow_site_dir/line"
rm -r "$slow_site_dir"
unset slow_site_dir
if [ -z "$SLOW_URL" ]; then
    kill "$SLOW" 2>/dev/null
    unset SLOW SLOW_URL
    echo "07_slow_site.sh: the proxy did not start" >&2
    return 1
fi
echo "The slow proxy listens on SLOW_URL=$SLOW_URL as SLOW=$SLOW; kill \$SLOW stops it"
