# Starts the lab server for the commands of the book, from the repository's top folder, in bash:
#
#     source lab/env.sh          # every answer 100 ms late
#     source lab/env.sh 0        # or as late as the argument says: 0, 250ms, 1s
#
# It starts build/bin/labserver on a free port in the background and sets two variables in your
# shell: URL, the server's address, which every command of the book passes on as --url "$URL", and
# LAB, the server's process id. `kill $LAB` stops the server. It must be sourced: a script run as a
# command cannot set the variables of the shell that ran it. Another terminal has neither variable,
# so keep one terminal for a whole chapter.

if ! (return 0 2>/dev/null); then
    echo "lab/env.sh sets variables in your shell: run it as 'source lab/env.sh'" >&2
    exit 2
fi

if [ -n "${LAB:-}" ] && [ "$(cat "/proc/$LAB/comm" 2>/dev/null)" = labserver ]; then
    echo "The lab server is already running: URL=$URL LAB=$LAB (kill \$LAB, then source again)"
    return 0
fi
if [ ! -x build/bin/labserver ]; then
    echo "lab/env.sh: no build/bin/labserver here; run it from the repository's top folder," >&2
    echo "after lab/quickstart.sh or 'cmake --build build --target labserver'" >&2
    return 1
fi

# Once it listens, the server prints one line on stdout, "listening on http://127.0.0.1:PORT/
# (delay 100 ms)". A named pipe hands that line to `read`, which waits for it. A server that cannot
# start exits, which closes the pipe: `read` then gets nothing. What it says on stderr goes to a log
# rather than into the output of the commands that follow.
lab_env_dir=$(mktemp -d) && mkfifo "$lab_env_dir/line" || return 1
build/bin/labserver --port 0 --delay "${1:-100ms}" > "$lab_env_dir/line" 2> build/labserver.log &
LAB=$!
URL=
read -r -t 10 _ _ URL _ < "$lab_env_dir/line"
rm -r "$lab_env_dir"
unset lab_env_dir

if [ -z "$URL" ]; then
    kill "$LAB" 2>/dev/null  # in case it is still starting after 10 s
    unset LAB URL
    echo "lab/env.sh: the lab server did not start; build/labserver.log says:" >&2
    cat build/labserver.log >&2
    return 1
fi
echo "The lab server listens on URL=$URL as LAB=$LAB; kill \$LAB stops it (log: build/labserver.log)"
